// Package devenv starts and stops the local Flotilla stack behind `make up` / `make down`: three
// Kubernetes clusters, the Temporal dev server with its Web UI, a Helm chart repository, the worker, an
// example repository and GitRepo. Every process is recorded by PID so that `make down` stops exactly what
// `make up` started.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/agentkey"
	"github.com/flotilla-gitops/flotilla/internal/envdefault"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/env/tempdev"
)

// Options configure the local stack.
type Options struct {
	Root         string // the checkout: bin/ and examples/ are read from here
	Dir          string // state: clusters, Temporal's database, logs, pid files
	TemporalPort int
	UIPort       int
	Clusters     []string
	// Agents are the clusters (of Clusters) registered in pull mode, each reached only by a flotilla-agent
	// process of its own (default: prod, as an edge cluster would be).
	Agents []string
	// TaskQueue is the installation's (default FLOTILLA_TASK_QUEUE, as bin/flotilla reads it, so the
	// commands `make up` prints reach the stack it started).
	TaskQueue string
	Out       io.Writer
}

func (o *Options) defaults() {
	if o.TemporalPort == 0 {
		o.TemporalPort = 7233
	}
	if o.UIPort == 0 {
		o.UIPort = 8233
	}
	if o.TaskQueue == "" {
		o.TaskQueue = envdefault.TaskQueue()
	}
	if len(o.Clusters) == 0 {
		o.Clusters = []string{"dev", "test", "prod"}
	}
	if o.Agents == nil {
		o.Agents = []string{"prod"}
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
}

func (o *Options) say(format string, args ...any) {
	fmt.Fprintf(o.Out, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// Up starts everything, deploys the example GitRepo and waits until every cluster reports Ready.
func Up(ctx context.Context, o Options) error {
	o.defaults()
	if running(o.Dir) {
		return errors.New("the local stack is already running (see " + o.Dir + "); run `make down` first")
	}
	_ = os.RemoveAll(o.Dir)
	bin := filepath.Join(o.Root, "bin")
	pids := filepath.Join(o.Dir, "pids")
	logs := filepath.Join(o.Dir, "logs")
	for _, d := range []string{pids, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	ok := false
	defer func() {
		if !ok {
			o.say("start-up failed; stopping what was started")
			_ = Down(o.Dir, io.Discard)
		}
	}()

	start := time.Now()
	var specs []localk8s.ClusterOptions
	for _, name := range o.Clusters {
		specs = append(specs, localk8s.ClusterOptions{Name: name, Workloads: true})
	}
	o.say("starting clusters %s", strings.Join(o.Clusters, ", "))
	k8s, err := localk8s.Start(ctx, localk8s.Options{Dir: filepath.Join(o.Dir, "clusters"), BinDir: bin, Clusters: specs, Detached: true,
		Logger: func(f string, a ...any) { o.say("  "+f, a...) }})
	if err != nil {
		return err
	}
	o.say("starting Temporal (gRPC 127.0.0.1:%d, Web UI 127.0.0.1:%d)", o.TemporalPort, o.UIPort)
	tmp, err := tempdev.Start(ctx, tempdev.Options{
		Bin: filepath.Join(bin, "temporal"), Dir: filepath.Join(o.Dir, "temporal"),
		Port: o.TemporalPort, UIPort: o.UIPort, SearchAttributes: api.SearchAttributes,
		LogFile: filepath.Join(logs, "temporal.log"), PIDFile: filepath.Join(pids, "temporal.pid"), Detached: true,
	})
	if err != nil {
		return err
	}
	addr, err := chartRepoAddr()
	if err != nil {
		return err
	}
	if want := strings.TrimPrefix(ExampleChartRepoURL, "https://"); addr != want {
		o.say("starting the chart repository https://%s (%s is taken; the example's copy names the new port)", addr, want)
	} else {
		o.say("starting the chart repository https://%s", addr)
	}
	charts, _, err := StartChartRepo(ctx, ChartRepoOptions{Bin: filepath.Join(bin, "flotilla-dev"), Dir: filepath.Join(o.Dir, "chart-repo"),
		Addr: addr, LogFile: filepath.Join(logs, "chart-repo.log"), PIDFile: filepath.Join(pids, "chart-repo.pid"), Detached: true})
	if err != nil {
		return err
	}
	if _, err := charts.Publish(ExampleChart, "1.0.0"); err != nil {
		return err
	}
	credentials := filepath.Join(o.Dir, "credentials.yaml")
	data, err := charts.CredentialsYAML()
	if err != nil {
		return err
	}
	if err := os.WriteFile(credentials, data, 0o600); err != nil {
		return err
	}
	repoDir := filepath.Join(o.Dir, "git", "example")
	commit, err := InitRepo(repoDir, filepath.Join(o.Root, "examples", "repo"))
	if err != nil {
		return err
	}
	if moved, err := PointExampleAtChartRepo(repoDir, charts.URL); err != nil {
		return err
	} else if moved {
		if commit, err = Commit(repoDir, "the chart repository listens on "+charts.URL); err != nil {
			return err
		}
	}
	o.say("example repository file://%s at %s", repoDir, api.ShortCommit(commit))
	keyFile, key, err := NewInstallationKey(o.Dir)
	if err != nil {
		return err
	}
	_, err = StartWorker(WorkerOptions{Bin: bin, Address: tmp.Address(), TaskQueue: o.TaskQueue, CacheDir: filepath.Join(o.Dir, "cache"),
		LogFile: filepath.Join(logs, "worker.log"), PIDFile: filepath.Join(pids, "worker.pid"), Detached: true,
		InstallationKeyFile: keyFile, ExtraArgs: []string{"--credentials", credentials}})
	if err != nil {
		return err
	}
	cli := CLI{Bin: filepath.Join(bin, "flotilla"), Address: tmp.Address(), TaskQueue: o.TaskQueue, Out: o.Out}
	for _, name := range o.Clusters {
		reach := []string{"--kubeconfig", k8s.Kubeconfig(name)}
		if slices.Contains(o.Agents, name) {
			reach = []string{"--agent"}
		}
		if err := cli.Run(ctx, append(append([]string{"cluster", "add", name, "--replace"}, reach...), "--label", "env="+name,
			"--values", filepath.Join(o.Root, "examples", "clusters", name+".yaml"))...); err != nil {
			return err
		}
	}
	for _, name := range o.Agents {
		o.say("starting the agent of %s (pull mode: only it holds %s's kubeconfig)", name, name)
		if _, err := StartAgent(AgentOptions{Bin: bin, Address: tmp.Address(), TaskQueue: o.TaskQueue, Cluster: name,
			Kubeconfig: k8s.Kubeconfig(name), CacheDir: filepath.Join(o.Dir, "agents", name), Key: key.ForCluster("", name),
			LogFile: filepath.Join(logs, "agent-"+name+".log"), PIDFile: filepath.Join(pids, "agent-"+name+".pid"), Detached: true}); err != nil {
			return err
		}
	}
	gitrepo, err := os.ReadFile(filepath.Join(o.Root, "examples", "gitrepo.yaml"))
	if err != nil {
		return err
	}
	gitrepoFile := filepath.Join(o.Dir, "gitrepo.yaml")
	if err := os.WriteFile(gitrepoFile, []byte(strings.ReplaceAll(string(gitrepo), "REPO_URL", "file://"+repoDir)), 0o644); err != nil {
		return err
	}
	if err := cli.Run(ctx, "apply", "-f", gitrepoFile); err != nil {
		return err
	}
	if err := cli.Run(ctx, "status", "example", "--wait", "--timeout", "5m"); err != nil {
		return err
	}
	ok = true
	fmt.Fprintf(o.Out, `
Flotilla is up (%s).
  Temporal Web UI:   %s/namespaces/default/workflows
  Temporal address:  %s
  Example repo:      file://%s   (commit there; the GitRepo polls every 15s)
  Status:            bin/flotilla status example
  Chart repository:  %s   (account and CA: secret %q of %s)
                     serves %s 1.0.0; publish another version and the example deploys the newest ^1.0 at its next poll:
                       bin/flotilla-dev chart-repo publish %s 1.1.0
                       bin/flotilla status example -o yaml | grep chartVersion
  Kubeconfigs:
`, time.Since(start).Round(time.Second), tmp.UIAddress(), tmp.Address(), repoDir, charts.URL, ChartRepoSecret, credentials,
		ExampleChart, ExampleChart)
	for _, name := range o.Clusters {
		mode := ""
		if slices.Contains(o.Agents, name) {
			mode = "   (pull mode: only its flotilla-agent uses it; bin/flotilla cluster list)"
		}
		fmt.Fprintf(o.Out, "    %-5s KUBECONFIG=%s%s\n", name, k8s.Kubeconfig(name), mode)
	}
	fmt.Fprintf(o.Out, "  Logs:              %s\n  Stop everything:   make down\n", logs)
	return nil
}

// Down stops every process recorded under dir, by PID.
func Down(dir string, out io.Writer) error {
	var errs []error
	stopped := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		matches, _ := filepath.Glob(filepath.Join(p, "*.pid"))
		if len(matches) == 0 {
			return nil
		}
		stopped += len(matches)
		if err := proc.StopPIDFiles(p, 5*time.Second); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	fmt.Fprintf(out, "stopped %d processes recorded under %s\n", stopped, dir)
	return errors.Join(errs...)
}

// chartRepoAddr is where the example expects the chart repository, or a free loopback port when another
// program holds that one.
func chartRepoAddr() (string, error) {
	addr := strings.TrimPrefix(ExampleChartRepoURL, "https://")
	l, err := net.Listen("tcp", addr)
	if err == nil {
		return addr, l.Close()
	}
	port, err := proc.FreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

func running(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".pid") {
			found = true
		}
		return nil
	})
	return found
}

// WorkerOptions start a flotilla-worker process.
type WorkerOptions struct {
	Bin, Address, CacheDir, LogFile, PIDFile string
	// TemporalNamespace is the Temporal namespace (--temporal-namespace); empty is the worker's default.
	TemporalNamespace string
	// TaskQueue is the installation's; empty is api.DefaultTaskQueue.
	TaskQueue string
	// RefuseLocalRepos starts the worker as an installation does, refusing repositories on its disk; by
	// default it allows them (FLOTILLA_ALLOW_LOCAL_REPOS=1), since every repository of `make up`, the
	// tests and the benchmark is a folder of this machine, and lets it reach chart repositories on loopback
	// (FLOTILLA_ALLOW_CHART_NETWORKS), where theirs listen. The environment, not flags, carries both, so an
	// older worker binary (make bench-compare's base) starts all the same.
	RefuseLocalRepos bool
	// InstallationKeyFile is the installation key (ADR 26), given through FLOTILLA_INSTALLATION_KEY_FILE
	// for the same reason; empty: the worker binds no agent.
	InstallationKeyFile string
	ExtraArgs           []string
	Detached            bool
}

// StartWorker starts bin/flotilla-worker as its own process. The task queue is always on its command line,
// so a FLOTILLA_TASK_QUEUE in the caller's environment never splits a stack whose workflows are started
// on another queue.
func StartWorker(o WorkerOptions) (*proc.Process, error) {
	args := []string{"--address", o.Address, "--task-queue", orDefaultQueue(o.TaskQueue), "--cache-dir", o.CacheDir, "--dev-log"}
	if o.TemporalNamespace != "" {
		args = append(args, "--temporal-namespace", o.TemporalNamespace)
	}
	env := []string{"FLOTILLA_ALLOW_LOCAL_REPOS=1", "FLOTILLA_ALLOW_CHART_NETWORKS=127.0.0.0/8,::1/128"}
	if o.RefuseLocalRepos {
		env[0] = "FLOTILLA_ALLOW_LOCAL_REPOS=0"
	}
	if o.InstallationKeyFile != "" {
		env = append(env, "FLOTILLA_INSTALLATION_KEY_FILE="+o.InstallationKeyFile)
	}
	return proc.Start(proc.Spec{Name: "flotilla-worker", Path: filepath.Join(o.Bin, "flotilla-worker"),
		Args: append(args, o.ExtraArgs...), Env: env, LogFile: o.LogFile, PIDFile: o.PIDFile, Detached: o.Detached})
}

// AgentOptions start a flotilla-agent process for one cluster.
type AgentOptions struct {
	Bin, Address, CacheDir, LogFile, PIDFile string
	// Cluster and Workspace are the cluster's inventory name and workspace (empty: fleet-default).
	Cluster, Workspace string
	// Kubeconfig is the cluster's, given to the agent only.
	Kubeconfig string
	// TaskQueue is the installation's; empty is api.DefaultTaskQueue.
	TaskQueue string
	// Key is the cluster's agent key, given through FLOTILLA_AGENT_KEY as its Secret gives it in a
	// cluster; zero: an agent without one.
	Key       agentkey.Key
	ExtraArgs []string
	Detached  bool
}

// StartAgent starts bin/flotilla-agent as its own process, with the cluster's kubeconfig.
func StartAgent(o AgentOptions) (*proc.Process, error) {
	args := []string{"--cluster", o.Cluster, "--address", o.Address, "--task-queue", orDefaultQueue(o.TaskQueue),
		"--kubeconfig", o.Kubeconfig, "--cache-dir", o.CacheDir, "--dev-log"}
	if o.Workspace != "" {
		args = append(args, "--workspace", o.Workspace)
	}
	var env []string
	if !o.Key.IsZero() {
		env = append(env, "FLOTILLA_AGENT_KEY="+o.Key.Encode())
	}
	return proc.Start(proc.Spec{Name: "flotilla-agent-" + o.Cluster, Path: filepath.Join(o.Bin, "flotilla-agent"),
		Args: append(args, o.ExtraArgs...), Env: env, LogFile: o.LogFile, PIDFile: o.PIDFile, Detached: o.Detached})
}

// NewInstallationKey writes a new installation key to dir/installation.key, readable by its owner only.
func NewInstallationKey(dir string) (string, agentkey.Key, error) {
	k, err := agentkey.Generate()
	if err != nil {
		return "", agentkey.Key{}, err
	}
	path := filepath.Join(dir, "installation.key")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", agentkey.Key{}, err
	}
	return path, k, os.WriteFile(path, []byte(k.Encode()+"\n"), 0o600)
}

func orDefaultQueue(q string) string {
	if q == "" {
		return api.DefaultTaskQueue
	}
	return q
}
