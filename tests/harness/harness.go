// Package harness starts a real Flotilla stack for end-to-end tests: kube-apiservers (with kwok where
// workloads must become Ready), a namespace of the Temporal dev server the test binary shares (Main) or a
// dev server of its own, the flotilla-worker binary and git repositories, all on loopback, in
// t.TempDir(), and stopped by PID when the test ends.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/agentkey"
	"github.com/flotilla-gitops/flotilla/internal/codec"
	"github.com/flotilla-gitops/flotilla/internal/temporalconn"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/needs"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/env/tempdev"
)

// Root is the repository checkout.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BinDir holds the built tools and Flotilla's binaries (FLOTILLA_BIN, default <root>/bin).
func BinDir() string { return needs.BinDir() }

// RequireBinaries skips the scenario under -short (`make unit`); otherwise a missing binary is a failed
// setup, with the command that builds it.
func RequireBinaries(t *testing.T) {
	t.Helper()
	needs.Binaries(t, slices.Concat(needs.LocalClusterPrograms, []string{"registry", "temporal", "flotilla-worker", "flotilla", "flotilla-agent"})...)
}

// Stack is one running Flotilla installation.
type Stack struct {
	t   *testing.T
	Dir string
	K8s *localk8s.Env
	// Temporal is the dev server the stack started for itself; nil when the test gave its own
	// (Options.Temporal) or the stack runs in a namespace of the shared one (Main).
	Temporal *tempdev.Server
	// address is the Temporal frontend everything connects to, and namespace the stack's namespace on it.
	address, namespace string
	// ui is the Temporal Web UI's URL, when the server has one.
	ui string
	// connArgs say how to connect to it (TLS flags with Options.Temporal, --temporal-namespace on the
	// shared server), for the worker, agents and CLI.
	connArgs []string
	Worker   *proc.Process
	Client   client.Client
	pool     *agentclient.Pool
	own      ownKubeconfigs
	// workerArgs are appended to every worker start (Options.WorkerArgs).
	workerArgs []string
	// cliArgs come before every CLI command's own (--codec-key-file with Options.CodecKeyFile).
	cliArgs []string
	// InstallationKeyFile and InstallationKey are the stack's installation key (ADR 26): its workers bind
	// its agents, each given its cluster's key.
	InstallationKeyFile string
	InstallationKey     agentkey.Key
	// dc reads the payloads of histories as the stack's client writes them.
	dc converter.DataConverter
}

// Options choose the clusters of a stack.
type Options struct {
	Clusters []localk8s.ClusterOptions
	// WorkerArgs are extra flags for flotilla-worker, e.g. --webhook-listen.
	WorkerArgs []string
	// BareTemporal starts the dev server without Flotilla's search attributes, as a user's own server is.
	BareTemporal bool
	// OwnTemporal starts a dev server for this stack alone, for a scenario that restarts it
	// (RestartTemporal); otherwise, under Main, the stack takes a namespace of the shared one.
	OwnTemporal bool
	// CodecKeyFile is a keyring the worker, the CLI and the stack's Client encrypt payloads with
	// (--codec-key-file). Histories are still read raw (HistoriesContaining): encrypted.
	CodecKeyFile string
	// ManagementCluster names the local cluster that is the management cluster of flotilla-controller
	// (StartController): the workers read clusters' kubeconfig Secrets there (--management-kubeconfig).
	ManagementCluster string
	// Temporal is a Temporal server the test started itself (one requiring mTLS, say), for the stack to use
	// instead of starting the dev server: its address, and the TLS files the worker, the agents, the CLI and
	// the stack's Client connect with (passed as --tls-ca-file, --tls-cert-file, --tls-key-file and
	// --tls-server-name). Its namespace must be the default one.
	Temporal *temporalconn.Settings
}

// Start brings a stack up and registers its teardown.
func Start(t *testing.T, o Options) *Stack {
	t.Helper()
	RequireBinaries(t)
	// Generous: on a 2-core machine shared with builds, starting API servers and Temporal can take minutes.
	ctx, cancel := context.WithTimeout(context.Background(), Patience(6*time.Minute))
	defer cancel()
	s := &Stack{t: t, Dir: t.TempDir(), pool: agentclient.NewPool(nil), workerArgs: o.WorkerArgs}
	var err error
	s.InstallationKeyFile, s.InstallationKey, err = devenv.NewInstallationKey(s.Dir)
	require.NoError(t, err)
	s.dc = converter.GetDefaultDataConverter()
	if o.CodecKeyFile != "" {
		s.workerArgs = append([]string{"--codec-key-file", o.CodecKeyFile}, s.workerArgs...)
		s.cliArgs = []string{"--codec-key-file", o.CodecKeyFile}
		cdc, err := codec.Load(o.CodecKeyFile)
		require.NoError(t, err)
		s.dc = cdc.DataConverter()
	}
	// The clusters and Temporal start side by side: each spends most of its start waiting for readiness.
	type started struct {
		k8s *localk8s.Env
		err error
	}
	clusters := make(chan started, 1)
	go func() {
		k8s, err := localk8s.Start(ctx, localk8s.Options{Dir: filepath.Join(s.Dir, "clusters"), BinDir: BinDir(), Clusters: o.Clusters,
			Logger: func(f string, a ...any) { t.Logf("localk8s: "+f, a...) }})
		clusters <- started{k8s, err}
	}()
	copts := client.Options{Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	var temporalErr error
	if o.Temporal != nil {
		s.address, s.connArgs = o.Temporal.Address, connArgs(*o.Temporal)
		s.workerArgs = append(append([]string{}, s.connArgs...), s.workerArgs...)
		s.cliArgs = append(append([]string{}, s.connArgs...), s.cliArgs...)
		copts, temporalErr = o.Temporal.ClientOptions(copts.Logger)
	} else if srv, ns, ok, err := sharedTemporal(ctx, o); ok || err != nil {
		temporalErr = err
		if ok {
			s.address, s.namespace, s.ui = srv.Address(), ns, srv.UIAddress()
			s.connArgs = []string{"--temporal-namespace", ns}
			s.workerArgs = append(append([]string{}, s.connArgs...), s.workerArgs...)
			s.cliArgs = append(append([]string{}, s.connArgs...), s.cliArgs...)
			copts.Namespace = ns
		}
	} else {
		attrs := api.SearchAttributes
		if o.BareTemporal {
			attrs = nil
		}
		var tmp *tempdev.Server
		tmp, temporalErr = tempdev.Start(ctx, tempdev.Options{Bin: filepath.Join(BinDir(), "temporal"), Dir: filepath.Join(s.Dir, "temporal"),
			SearchAttributes: attrs, LogFile: filepath.Join(s.Dir, "temporal.log")})
		if temporalErr == nil {
			s.Temporal, s.address, s.ui = tmp, tmp.Address(), tmp.UIAddress()
			t.Cleanup(func() { _ = tmp.Stop() })
		}
	}
	k := <-clusters
	if k.err == nil {
		s.K8s = k.k8s
		t.Cleanup(func() { _ = k.k8s.Stop() })
	}
	require.NoError(t, k.err)
	require.NoError(t, temporalErr)
	if o.ManagementCluster != "" {
		s.workerArgs = append(s.workerArgs, "--management-kubeconfig", s.K8s.Kubeconfig(o.ManagementCluster))
	}
	copts.HostPort = s.address
	copts.DataConverter = s.dc
	c, err := client.Dial(copts)
	require.NoError(t, err)
	s.Client = c
	t.Cleanup(c.Close)
	if s.namespace != "" {
		t.Cleanup(s.closeNamespace) // after the workers stop: cleanups run last first
	}
	s.StartWorker()
	t.Cleanup(func() {
		if s.Worker != nil {
			_ = s.Worker.Stop(5 * time.Second)
		}
		if t.Failed() {
			dumpLog(t, filepath.Join(s.Dir, "worker.log"))
		}
	})
	return s
}

// connArgs are the flags that connect a Flotilla process as st says, beside --address.
func connArgs(st temporalconn.Settings) []string {
	var args []string
	for _, f := range []struct{ flag, value string }{{"--tls-ca-file", st.ServerCAFile}, {"--tls-cert-file", st.ClientCertFile},
		{"--tls-key-file", st.ClientKeyFile}, {"--tls-server-name", st.ServerName}} {
		if f.value != "" {
			args = append(args, f.flag, f.value)
		}
	}
	return args
}

// Address is the Temporal frontend the stack's processes connect to.
func (s *Stack) Address() string { return s.address }

// ConnArgs are the flags, beside --address, that connect a Flotilla program (worker, agent, CLI) to the
// stack's Temporal namespace.
func (s *Stack) ConnArgs() []string { return append([]string{}, s.connArgs...) }

// TemporalCommand is the `temporal` CLI with args, pointed at the stack's server and namespace.
func (s *Stack) TemporalCommand(ctx context.Context, args ...string) *exec.Cmd {
	args = append(append([]string{}, args...), "--address", s.address)
	if s.namespace != "" {
		args = append(args, "--namespace", s.namespace)
	}
	return exec.CommandContext(ctx, filepath.Join(BinDir(), "temporal"), args...)
}

// TemporalUI is the Temporal Web UI's URL and the stack's namespace there, or "" without a UI.
func (s *Stack) TemporalUI() (url, namespace string) {
	if s.namespace == "" {
		return s.ui, "default"
	}
	return s.ui, s.namespace
}

func dumpLog(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) > 80 {
		lines = lines[len(lines)-80:]
	}
	t.Logf("last lines of %s:\n%s", path, strings.Join(lines, "\n"))
}

// StartWorker starts the flotilla-worker binary (again).
func (s *Stack) StartWorker() {
	w, err := devenv.StartWorker(devenv.WorkerOptions{Bin: BinDir(), Address: s.address, InstallationKeyFile: s.InstallationKeyFile,
		CacheDir: filepath.Join(s.Dir, "gitcache"), LogFile: filepath.Join(s.Dir, "worker.log"), ExtraArgs: s.workerArgs})
	require.NoError(s.t, err)
	s.Worker = w
}

// StartOtherWorker starts one more flotilla-worker on the stack's task queue, with a cache of its own, as a
// second machine would run it. It is stopped when the test ends (and its log shown if the test failed);
// the returned process may be stopped or killed before.
func (s *Stack) StartOtherWorker(name string) *proc.Process {
	s.t.Helper()
	logFile := filepath.Join(s.Dir, "worker-"+name+".log")
	w, err := devenv.StartWorker(devenv.WorkerOptions{Bin: BinDir(), Address: s.address, InstallationKeyFile: s.InstallationKeyFile,
		CacheDir: filepath.Join(s.Dir, "cache-"+name), LogFile: logFile, ExtraArgs: s.workerArgs})
	require.NoError(s.t, err)
	s.t.Cleanup(func() {
		_ = w.Stop(5 * time.Second)
		if s.t.Failed() {
			dumpLog(s.t, logFile)
		}
	})
	return w
}

// StartAgent starts a flotilla-agent for the fleet-default cluster name, with the kubeconfig of the local
// cluster backing, which only the agent is given. It is stopped when the test ends (and its log shown if
// the test failed); the returned process may be stopped or killed before.
func (s *Stack) StartAgent(name, backing string, extraArgs ...string) *proc.Process {
	s.t.Helper()
	logFile := filepath.Join(s.Dir, "agent-"+name+".log")
	a, err := devenv.StartAgent(devenv.AgentOptions{Bin: BinDir(), Address: s.address, Cluster: name, Key: s.InstallationKey.ForCluster("", name),
		Kubeconfig: s.K8s.Kubeconfig(backing), CacheDir: filepath.Join(s.Dir, "agent-"+name), LogFile: logFile, ExtraArgs: append(append([]string{}, s.connArgs...), extraArgs...)})
	require.NoError(s.t, err)
	s.t.Cleanup(func() {
		_ = a.Stop(5 * time.Second)
		if s.t.Failed() {
			dumpLog(s.t, logFile)
		}
	})
	return a
}

// AddAgentCluster registers a fleet-default cluster in pull mode (`cluster add --agent`): the management
// side gets no kubeconfig for it.
func (s *Stack) AddAgentCluster(name string, labels map[string]string, values map[string]any) {
	s.t.Helper()
	args := []string{"cluster", "add", name, "--replace", "--agent"}
	for k, v := range labels {
		args = append(args, "--label", k+"="+v)
	}
	if values != nil {
		data, err := yaml.Marshal(values)
		require.NoError(s.t, err)
		f := filepath.Join(s.Dir, "values-agent-"+name+".yaml")
		require.NoError(s.t, os.WriteFile(f, data, 0o644))
		args = append(args, "--values", f)
	}
	s.CLIRun(args...)
}

// KillWorker kills the worker with SIGKILL, as a crash would.
func (s *Stack) KillWorker() {
	require.NoError(s.t, s.Worker.Kill())
	s.Worker = nil
}

// RunCLI runs bin/flotilla against the Temporal server at address, on the default task queue, and returns
// what it printed and its exit code. It is the one way tests run the CLI: the test fails only when the CLI
// could not start or did not end within a minute; whether its exit code is right is for the test to say.
func RunCLI(t *testing.T, address string, args ...string) devenv.CLIResult {
	t.Helper()
	return runCLI(t, devenv.CLI{Bin: filepath.Join(BinDir(), "flotilla"), Address: address}, args...)
}

func runCLI(t *testing.T, cli devenv.CLI, args ...string) devenv.CLIResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience(time.Minute))
	defer cancel()
	res, err := cli.Exec(ctx, args...)
	require.NoError(t, err, "flotilla %s", strings.Join(args, " "))
	return res
}

// CLIWithin is CLI for a command that waits on its own (`cluster remove`), given up to limit to end.
func (s *Stack) CLIWithin(limit time.Duration, args ...string) devenv.CLIResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := devenv.CLI{Bin: filepath.Join(BinDir(), "flotilla"), Address: s.address, Args: s.cliArgs}.Exec(ctx, args...)
	require.NoError(s.t, err, "flotilla %s", strings.Join(args, " "))
	return res
}

// CLI runs bin/flotilla against the stack, for a command whose failure the test examines.
func (s *Stack) CLI(args ...string) devenv.CLIResult {
	s.t.Helper()
	return s.Installation().CLI(args...)
}

// CLIRun runs bin/flotilla against the stack, fails the test unless it succeeds, and returns its stdout.
func (s *Stack) CLIRun(args ...string) string {
	s.t.Helper()
	return s.Installation().CLIRun(args...)
}

// ApplyFile writes a YAML document to a file for `flotilla apply -f`.
func (s *Stack) ApplyFile(doc string) string {
	s.t.Helper()
	f, err := os.CreateTemp(s.Dir, "apply-*.yaml")
	require.NoError(s.t, err)
	_, err = f.WriteString(doc)
	require.NoError(s.t, err)
	require.NoError(s.t, f.Close())
	return f.Name()
}

// AddCluster registers a cluster of fleet-default with labels and templateValues through the CLI,
// replacing the settings of one registered before (`cluster add --replace`).
func (s *Stack) AddCluster(name, backing string, labels map[string]string, values map[string]any) {
	s.t.Helper()
	s.AddClusterIn("", name, backing, labels, values)
}

// AddClusterIn is AddCluster into the workspace namespace (`cluster add -n`; empty: fleet-default).
func (s *Stack) AddClusterIn(namespace, name, backing string, labels map[string]string, values map[string]any) {
	s.t.Helper()
	args := []string{"cluster", "add", name, "--replace", "--kubeconfig", s.K8s.Kubeconfig(backing)}
	if namespace != "" {
		args = append(args, "-n", namespace)
	}
	for k, v := range labels {
		args = append(args, "--label", k+"="+v)
	}
	if values != nil {
		data, err := yaml.Marshal(values)
		require.NoError(s.t, err)
		f := filepath.Join(s.Dir, "values-"+namespace+"-"+name+".yaml")
		require.NoError(s.t, os.WriteFile(f, data, 0o644))
		args = append(args, "--values", f)
	}
	s.CLIRun(args...)
}

// ConfinedCluster is a cluster that shares its API server with others, confined to a namespace named
// as itself.
type ConfinedCluster struct {
	Name   string
	Labels map[string]string
}

// AddConfinedClusters registers clusters of fleet-default on the backing API server, each confined to its
// own namespace, in one apply.
func (s *Stack) AddConfinedClusters(backing string, clusters ...ConfinedCluster) {
	s.t.Helper()
	var docs []string
	for _, c := range clusters {
		labels, err := json.Marshal(c.Labels) // JSON is YAML
		require.NoError(s.t, err)
		docs = append(docs, fmt.Sprintf("apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: %s\n  labels: %s\n"+
			"spec:\n  kubeConfigPath: %s\n  confineToNamespace: %s\n", c.Name, labels, s.K8s.Kubeconfig(backing), c.Name))
	}
	s.Apply(strings.Join(docs, "---\n"))
}

// Apply applies a YAML document through the CLI.
func (s *Stack) Apply(doc string) {
	s.t.Helper()
	s.CLIRun("apply", "-f", s.ApplyFile(doc))
}

// Status queries the status of a fleet-default GitRepo.
func (s *Stack) Status(name string) (api.GitRepoStatus, error) {
	return s.StatusOf(api.KeyOf("", name))
}

// StatusOf queries the status of the GitRepo of any workspace. A query that times out or finds Temporal
// unavailable is asked again for up to statusPatience: on a loaded machine one answer can take longer than
// one request's deadline, and that is not what a scenario asking for the status is testing.
func (s *Stack) StatusOf(key api.GitRepoKey) (api.GitRepoStatus, error) {
	deadline := time.Now().Add(statusPatience)
	for {
		st, err := s.statusOnce(key)
		if err == nil || !transient(err) || time.Now().After(deadline) {
			return st, err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

var statusPatience = Patience(90 * time.Second)

func (s *Stack) statusOnce(key api.GitRepoKey) (api.GitRepoStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Patience(15*time.Second))
	defer cancel()
	var st api.GitRepoStatus
	v, err := s.Client.QueryWorkflow(ctx, key.WorkflowID(), "", api.QueryStatus)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

// transient says whether err is a request that ran out of time or found the server busy or away, rather
// than an answer.
func transient(err error) bool {
	switch serviceerror.ToStatus(err).Code() {
	case codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted:
		return true
	}
	return false
}

// WaitStatus polls a fleet-default GitRepo's status until cond holds, and fails with the last status when
// it never does.
func (s *Stack) WaitStatus(name string, timeout time.Duration, what string, cond func(api.GitRepoStatus) bool) api.GitRepoStatus {
	s.t.Helper()
	return s.WaitStatusOf(api.KeyOf("", name), timeout, what, cond)
}

// WaitStatusOf is WaitStatus for the GitRepo of any workspace.
func (s *Stack) WaitStatusOf(key api.GitRepoKey, timeout time.Duration, what string, cond func(api.GitRepoStatus) bool) api.GitRepoStatus {
	s.t.Helper()
	stated := timeout
	timeout = Patience(timeout)
	deadline := time.Now().Add(timeout)
	var last api.GitRepoStatus
	var lastErr error
	for time.Now().Before(deadline) {
		st, err := s.StatusOf(key)
		if err == nil && cond(st) {
			return st
		}
		last, lastErr = st, err
		time.Sleep(250 * time.Millisecond)
	}
	b, _ := json.MarshalIndent(last, "", "  ")
	s.t.Fatalf("gitrepo %s: %s not reached within %s (%s with patience; last error %v); last status:\n%s\n%s", key, what, stated, timeout, lastErr, b,
		s.workflowTrouble(key.WorkflowID()))
	return last
}

// AllReady reports whether every targeted cluster is Ready at a commit.
func AllReady(st api.GitRepoStatus) bool {
	return st.Commit != "" && st.DesiredReadyClusters > 0 && st.ReadyClusters == st.DesiredReadyClusters
}

// Cluster returns one cluster's status.
func Cluster(st api.GitRepoStatus, name string) (api.ClusterStatus, bool) {
	for _, c := range st.Clusters {
		if c.Name == name {
			return c, true
		}
	}
	return api.ClusterStatus{}, false
}

// Helm returns a Helm/Kubernetes handle on a backing cluster.
func (s *Stack) Helm(backing string) *agentclient.Client {
	s.t.Helper()
	c, err := s.HelmClient(backing)
	require.NoError(s.t, err)
	return c
}

// HelmClient is Helm for a condition of Eventually: it returns its error instead of failing the test.
func (s *Stack) HelmClient(backing string) (*agentclient.Client, error) {
	path, err := s.own.path(s.Dir, backing, s.K8s.Kubeconfig(backing))
	if err != nil {
		return nil, err
	}
	return s.pool.Get(agentclient.Config{KubeconfigPath: path})
}

// Repo is a git repository fixture served over file://.
type Repo struct {
	t   *testing.T
	Dir string
}

// URL is the repository's clone URL.
func (r *Repo) URL() string { return "file://" + r.Dir }

// NewRepo creates a repository with the given files (path → content) committed on main.
func (s *Stack) NewRepo(files map[string]string) *Repo {
	s.t.Helper()
	r := &Repo{t: s.t, Dir: filepath.Join(s.Dir, fmt.Sprintf("repo-%d", time.Now().UnixNano()))}
	require.NoError(s.t, os.MkdirAll(r.Dir, 0o755))
	_, err := devenv.Git(r.Dir, "init", "-q", "-b", "main")
	require.NoError(s.t, err)
	r.Commit(files, "initial")
	return r
}

// Commit writes files (an empty content deletes the file) and commits; it returns the new HEAD.
func (r *Repo) Commit(files map[string]string, msg string) string {
	r.t.Helper()
	for p, content := range files {
		full := filepath.Join(r.Dir, p)
		if content == "" {
			require.NoError(r.t, os.RemoveAll(full))
			continue
		}
		require.NoError(r.t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(r.t, os.WriteFile(full, []byte(content), 0o644))
	}
	head, err := devenv.Commit(r.Dir, msg)
	require.NoError(r.t, err)
	return head
}

// CopyExample copies examples/repo into the repository, pointed at the chart repository at chartRepoURL
// as `make up` points it, and commits it.
func (r *Repo) CopyExample(chartRepoURL string) string {
	r.t.Helper()
	require.NoError(r.t, devenv.CopyTree(filepath.Join(Root(), "examples", "repo"), r.Dir))
	_, err := devenv.PointExampleAtChartRepo(r.Dir, chartRepoURL)
	require.NoError(r.t, err)
	head, err := devenv.Commit(r.Dir, "example bundles")
	require.NoError(r.t, err)
	return head
}

// GitRepoYAML renders a GitRepo document.
func GitRepoYAML(name, repo string, extra string) string {
	return fmt.Sprintf(`apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepo
metadata:
  name: %s
spec:
  repo: %s
  branch: main
  pollingInterval: 1s
%s`, name, repo, extra)
}

// Kube returns a client-go clientset for a backing cluster.
func (s *Stack) Kube(backing string) *kubernetes.Clientset {
	s.t.Helper()
	path, err := s.own.path(s.Dir, backing, s.K8s.Kubeconfig(backing))
	require.NoError(s.t, err)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(s.t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(s.t, err)
	return cs
}

// ConfigMapData reads a ConfigMap's data, or nil if it does not exist.
func (s *Stack) ConfigMapData(backing, namespace, name string) map[string]string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience(10*time.Second))
	defer cancel()
	cm, err := s.Kube(backing).CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return cm.Data
}

// The helpers below come in two forms: the plain one fails the test on an error, for a step of the
// scenario; the one that returns its error is for a condition of Eventually, where failing the test would
// end the condition's goroutine and turn one transient error into a timeout.

// Releases lists a GitRepo's Helm releases on a backing cluster, keyed by release name.
func (s *Stack) Releases(backing, gitRepo string) map[string]agentclient.ReleaseState {
	s.t.Helper()
	rels, err := s.ListReleases(backing, gitRepo)
	require.NoError(s.t, err)
	return rels
}

// ListReleases is Releases returning its error.
func (s *Stack) ListReleases(backing, gitRepo string) (map[string]agentclient.ReleaseState, error) {
	rels, err := s.listReleases(backing, gitRepo)
	if err != nil {
		return nil, err
	}
	out := map[string]agentclient.ReleaseState{}
	for _, r := range rels {
		out[r.Name] = r
	}
	return out, nil
}

// listReleases lists the releases labelled with a GitRepo name on a backing cluster, of every workspace.
func (s *Stack) listReleases(backing, gitRepo string) ([]agentclient.ReleaseState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Patience(10*time.Second))
	defer cancel()
	c, err := s.HelmClient(backing)
	if err != nil {
		return nil, err
	}
	rels, err := c.ListReleases(ctx, map[string]string{api.LabelGitRepo: gitRepo})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: listing releases of gitrepo %s: %w", backing, gitRepo, err)
	}
	return rels, nil
}

// ReleasesOf lists the Helm releases on a backing cluster that the GitRepo of any workspace owns (its
// labels name it: api.ReleaseOwner), keyed by namespace/name: releases of same-named GitRepos of other
// workspaces on the same API server are left out.
func (s *Stack) ReleasesOf(backing string, key api.GitRepoKey) map[string]agentclient.ReleaseState {
	s.t.Helper()
	rels, err := s.ListReleasesOf(backing, key)
	require.NoError(s.t, err)
	return rels
}

// ListReleasesOf is ReleasesOf returning its error.
func (s *Stack) ListReleasesOf(backing string, key api.GitRepoKey) (map[string]agentclient.ReleaseState, error) {
	rels, err := s.listReleases(backing, key.Name)
	if err != nil {
		return nil, err
	}
	out := map[string]agentclient.ReleaseState{}
	for _, r := range rels {
		if api.ReleaseOwner(r.Labels) == key {
			out[r.Namespace+"/"+r.Name] = r
		}
	}
	return out, nil
}

// NoReleases is a condition: the GitRepo has no release left on a backing cluster (an error is "not yet").
func (s *Stack) NoReleases(backing, gitRepo string) func() bool {
	return func() bool {
		rels, err := s.ListReleases(backing, gitRepo)
		if err != nil {
			s.t.Logf("%v (retrying)", err)
			return false
		}
		return len(rels) == 0
	}
}

// History returns every stored revision of a release.
func (s *Stack) History(backing, namespace, name string) []agentclient.ReleaseState {
	s.t.Helper()
	h, err := s.ReleaseHistory(backing, namespace, name)
	require.NoError(s.t, err)
	return h
}

// ReleaseHistory is History returning its error.
func (s *Stack) ReleaseHistory(backing, namespace, name string) ([]agentclient.ReleaseState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Patience(10*time.Second))
	defer cancel()
	c, err := s.HelmClient(backing)
	if err != nil {
		return nil, err
	}
	h, err := c.History(ctx, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: history of release %s/%s: %w", backing, namespace, name, err)
	}
	return h, nil
}

// ActivityCount counts how many times a workflow's current run scheduled an activity type.
func (s *Stack) ActivityCount(workflowID, activityType string) int {
	s.t.Helper()
	n, err := s.CountActivities(workflowID, activityType)
	require.NoError(s.t, err)
	return n
}

// CountActivities is ActivityCount returning its error.
func (s *Stack) CountActivities(workflowID, activityType string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Patience(30*time.Second))
	defer cancel()
	n, _, err := s.countActivitiesInRun(ctx, workflowID, "", activityType)
	return n, err
}

// CountActivitiesInAllRuns counts how many times a workflow scheduled an activity type over its current
// run and every run it continued as new from, following each run's link to the one before.
func (s *Stack) CountActivitiesInAllRuns(workflowID, activityType string) (n, runs int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), Patience(30*time.Second))
	defer cancel()
	for runID := ""; ; runs++ {
		inRun, previous, err := s.countActivitiesInRun(ctx, workflowID, runID, activityType)
		if err != nil {
			return 0, runs + 1, err
		}
		n += inRun
		if previous == "" {
			return n, runs + 1, nil
		}
		runID = previous
	}
}

// countActivitiesInRun counts one run's scheduled activities of a type and names the run it continued
// from ("" for the first).
func (s *Stack) countActivitiesInRun(ctx context.Context, workflowID, runID, activityType string) (n int, previous string, err error) {
	it := s.Client.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return 0, "", fmt.Errorf("history of %s run %q: %w", workflowID, runID, err)
		}
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			previous = a.GetContinuedExecutionRunId()
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activityType {
			n++
		}
	}
	return n, previous, nil
}

// HistoriesContaining lists the workflows (every run of every workflow of the namespace, open or closed)
// whose history holds text anywhere: in a payload (inputs, results, signals, queries' updates, markers of
// local activities), a memo, a search attribute or a failure. Events are searched in their wire form, in
// which payloads are the data converter's JSON, or its ciphertext with Options.CodecKeyFile.
func (s *Stack) HistoriesContaining(text string) ([]string, error) {
	var found []string
	err := s.eachEvent(func(id, run string, ev *historypb.HistoryEvent) (bool, error) {
		wire, err := proto.Marshal(ev)
		if err != nil {
			return false, err
		}
		if bytes.Contains(wire, []byte(text)) {
			found = append(found, id+" (run "+run+")")
			return false, nil
		}
		return true, nil
	})
	return found, err
}

// LargestPayload is the size in bytes of the largest event in any workflow's history: a bound on every
// payload Temporal carried (inputs, results, signals, memos).
func (s *Stack) LargestPayload() int {
	s.t.Helper()
	largest := 0
	require.NoError(s.t, s.eachEvent(func(_, _ string, ev *historypb.HistoryEvent) (bool, error) {
		largest = max(largest, proto.Size(ev))
		return true, nil
	}))
	return largest
}

// eachEvent calls fn with every event of every run of every workflow, a run's in order, until fn says
// to stop with that run.
func (s *Stack) eachEvent(fn func(id, run string, ev *historypb.HistoryEvent) (bool, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), Patience(time.Minute))
	defer cancel()
	var token []byte
	for {
		page, err := s.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token})
		if err != nil {
			return fmt.Errorf("listing workflows: %w", err)
		}
		for _, e := range page.GetExecutions() {
			id, run := e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()
			it := s.Client.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					return fmt.Errorf("history of %s run %s: %w", id, run, err)
				}
				more, err := fn(id, run, ev)
				if err != nil {
					return err
				}
				if !more {
					break
				}
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}

// CountWorkflows counts workflows matching a visibility query, as the Web UI's list does.
func (s *Stack) CountWorkflows(query string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), Patience(10*time.Second))
	defer cancel()
	resp, err := s.Client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		s.t.Logf("count %q: %v", query, err)
		return -1
	}
	return resp.GetCount()
}

// MarkerNames lists the markers in a workflow's current run, in order ("LocalActivity", "Version", …).
func (s *Stack) MarkerNames(workflowID string) []string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience(10*time.Second))
	defer cancel()
	var names []string
	it := s.Client.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(s.t, err, workflowID)
		if m := ev.GetMarkerRecordedEventAttributes(); m != nil {
			names = append(names, m.GetMarkerName())
		}
	}
	return names
}

// StartGitRepo starts a GitRepo workflow directly, as `temporal workflow start` would, with Flotilla's options.
func (s *Stack) StartGitRepo(in api.GitRepoInput) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience(10*time.Second))
	defer cancel()
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: api.GitRepoWorkflowID(in.Metadata.Name), TaskQueue: api.DefaultTaskQueue, WorkflowTaskTimeout: api.GitRepoTaskTimeout,
	}, api.GitRepoWorkflowType, in)
	require.NoError(s.t, err)
}

// RecordHistories writes the histories of the given workflows as `temporal workflow show --output json`
// does, into FLOTILLA_RECORD_HISTORIES (when set): the fixtures of workflows/replay_test.go.
func (s *Stack) RecordHistories(names map[string]string) {
	dir := os.Getenv("FLOTILLA_RECORD_HISTORIES")
	if dir == "" {
		return
	}
	require.NoError(s.t, os.MkdirAll(dir, 0o755))
	for file, id := range names {
		out, err := exec.Command(filepath.Join(BinDir(), "temporal"), "workflow", "show", "--address", s.address,
			"--workflow-id", id, "--output", "json").Output()
		require.NoError(s.t, err, id)
		require.NoError(s.t, os.WriteFile(filepath.Join(dir, file), out, 0o644))
	}
}

// ClusterStatus queries one cluster workflow directly (its live status, timestamps included).
func (s *Stack) ClusterStatus(gitRepo, cluster string) (api.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Patience(10*time.Second))
	defer cancel()
	var st api.ClusterStatus
	v, err := s.Client.QueryWorkflow(ctx, api.ClusterWorkflowID(gitRepo, cluster), "", api.QueryStatus)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

// WaitChecks waits until a cluster workflow has completed n more checks.
func (s *Stack) WaitChecks(gitRepo, cluster string, n int) {
	s.t.Helper()
	// Right after a worker restart the first query waits out the dead worker's sticky queue.
	var last time.Time
	require.Eventually(s.t, func() bool {
		first, err := s.ClusterStatus(gitRepo, cluster)
		last = first.LastChecked
		return err == nil
	}, Patience(time.Minute), 100*time.Millisecond, "cluster %s answers queries", cluster)
	seen := 0
	require.Eventually(s.t, func() bool {
		st, err := s.ClusterStatus(gitRepo, cluster)
		if err == nil && st.LastChecked.After(last) {
			last = st.LastChecked
			seen++
		}
		return seen >= n
	}, Patience(time.Minute), 100*time.Millisecond, "cluster %s: %d checks", cluster, n)
}
