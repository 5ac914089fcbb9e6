package chaos

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/harness"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

// config is what the environment asks of a soak (make chaos sets it; make test runs the defaults).
type config struct {
	// Kills and Minutes bound the soak: it stops at whichever comes first.
	Kills   int
	Minutes float64
	Seed    uint64
	// KubeconfigClusters are reached by the workers directly, AgentClusters through an agent each.
	KubeconfigClusters, AgentClusters int
	// Out is where the report's JSON goes; none when empty.
	Out string
}

func configFromEnv(t *testing.T) config {
	t.Helper()
	c := config{Kills: 20, Minutes: 15, Seed: uint64(time.Now().UnixNano()), KubeconfigClusters: 2, AgentClusters: 1,
		Out: os.Getenv("CHAOS_OUT")}
	var err error
	if v := os.Getenv("CHAOS_KILLS"); v != "" {
		c.Kills, err = strconv.Atoi(v)
		require.NoError(t, err, "CHAOS_KILLS")
	}
	if v := os.Getenv("CHAOS_MINUTES"); v != "" {
		c.Minutes, err = strconv.ParseFloat(v, 64)
		require.NoError(t, err, "CHAOS_MINUTES")
	}
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		c.Seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "CHAOS_SEED")
	}
	if v := os.Getenv("CHAOS_CLUSTERS"); v != "" {
		// "kubeconfig,agents", e.g. 3,2.
		parts := strings.Split(v, ",")
		require.Len(t, parts, 2, "CHAOS_CLUSTERS is KUBECONFIG,AGENTS, e.g. 3,2")
		c.KubeconfigClusters, err = strconv.Atoi(parts[0])
		require.NoError(t, err, "CHAOS_CLUSTERS")
		c.AgentClusters, err = strconv.Atoi(parts[1])
		require.NoError(t, err, "CHAOS_CLUSTERS")
	}
	require.Positive(t, c.Kills, "CHAOS_KILLS")
	require.Positive(t, c.Minutes, "CHAOS_MINUTES")
	require.Positive(t, c.KubeconfigClusters+c.AgentClusters, "CHAOS_CLUSTERS")
	return c
}

// fleetCluster is one cluster of the soak: its inventory name is its backing local cluster's.
type fleetCluster struct {
	Name  string
	Agent bool
}

// gitServer is the git server's own process, serving the soak's repository over HTTPS with basic auth;
// its address and certificate survive a kill, as a real server's would.
type gitServer struct {
	dir  string
	cfg  gitServerConfig
	ca   []byte
	proc *proc.Process
}

type gitServerConfig struct {
	Addr, Root, Username, Password string
}

func loadGitServerConfig(dir string) (gitServerConfig, error) {
	var c gitServerConfig
	data, err := os.ReadFile(filepath.Join(dir, "server.json"))
	if err != nil {
		return c, err
	}
	return c, json.Unmarshal(data, &c)
}

func prepareGitServer(t *testing.T, dir string) *gitServer {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	pki, err := testpki.New()
	require.NoError(t, err)
	_, _, _, err = pki.WriteFiles(dir)
	require.NoError(t, err)
	port, err := proc.FreePort()
	require.NoError(t, err)
	g := &gitServer{dir: dir, ca: pki.CAPEM, cfg: gitServerConfig{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Username: "flotilla", Password: "chaos-git-pa55"}}
	return g
}

// serve starts the process serving root, and waits until it answers.
func (g *gitServer) serve(ctx context.Context, root string) error {
	g.cfg.Root = root
	data, err := json.Marshal(g.cfg)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(g.dir, "server.json"), data, 0o600); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	p, err := proc.Start(proc.Spec{Name: "git server", Path: self, Args: []string{"-test.run=^$"}, Env: []string{gitServerEnv + "=" + g.dir},
		LogFile: filepath.Join(g.dir, "git-server.log")})
	if err != nil {
		return err
	}
	g.proc = p
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: (&testpki.PKI{CAPEM: g.ca}).Pool(), MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()
	_, err = p.AwaitReady(ctx, time.Minute, 100*time.Millisecond, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+g.cfg.Addr+"/", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	if err != nil {
		return fmt.Errorf("git server: %w; see %s", err, filepath.Join(g.dir, "git-server.log"))
	}
	return nil
}

func (g *gitServer) repoURL(name string) string { return "https://" + g.cfg.Addr + "/" + name }

// chartServer is the chart repository's own process (flotilla-dev chart-repo serve), on the address and
// certificate PrepareChartRepo laid out, so that it comes back where its clients expect it.
type chartServer struct {
	repo *devenv.ChartRepo
	proc *proc.Process
}

func (c *chartServer) serve(ctx context.Context) error {
	p, err := proc.Start(proc.Spec{Name: "chart repository", Path: filepath.Join(harness.BinDir(), "flotilla-dev"),
		Args: []string{"chart-repo", "serve", "--dir", c.repo.Dir}, LogFile: filepath.Join(c.repo.Dir, "serve.log")})
	if err != nil {
		return err
	}
	c.proc = p
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return c.repo.WaitServing(wctx, p.Done())
}

// credentialsFile writes the workers' --credentials: the git server's account and the chart repository's.
func credentialsFile(t *testing.T, dir string, git *gitServer, charts *devenv.ChartRepo) string {
	t.Helper()
	data, err := yaml.Marshal(map[string]map[string]string{
		"git":    {"username": git.cfg.Username, "password": git.cfg.Password},
		"charts": {"username": charts.Username, "password": charts.Password, "caBundle": string(charts.CAPEM)},
	})
	require.NoError(t, err)
	path := filepath.Join(dir, "credentials.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// bundleFiles are the soak repository at one desired state: two manifest bundles and one chart from the
// chart repository that follows every version published.
func bundleFiles(chartRepoURL string, versions map[string]int) map[string]string {
	files := map[string]string{
		"web/fleet.yaml": fmt.Sprintf("defaultNamespace: chaos\nhelm:\n  releaseName: web\n  repo: %s\n  chart: %s\n  version: \">=0.1.0\"\n",
			chartRepoURL, chartName),
	}
	for _, b := range manifestBundles {
		files[b+"/fleet.yaml"] = fmt.Sprintf("defaultNamespace: chaos\nhelm:\n  releaseName: %s\n", b)
		files[b+"/cm.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  version: v%d\n", b, versions[b])
	}
	return files
}

const chartName = "web"

var manifestBundles = []string{"cm-a", "cm-b"}

func gitRepoYAML(url string, git *gitServer) string {
	return harness.GitRepoYAML("chaos", url, "  clientSecretName: git\n  helmSecretName: charts\n"+
		"  caBundle: "+base64.StdEncoding.EncodeToString(git.ca)+"\n  targets:\n  - clusterSelector: {}\n")
}

func clusterOptions(cs []fleetCluster) []localk8s.ClusterOptions {
	var out []localk8s.ClusterOptions
	for _, c := range cs {
		out = append(out, localk8s.ClusterOptions{Name: c.Name})
	}
	return out
}

// pidsIn reads the PID files localk8s keeps for the processes of the clusters (etcd, API servers, kwok).
func pidsIn(dir string) []int {
	entries, _ := os.ReadDir(dir)
	var pids []int
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.SplitN(strings.TrimSpace(string(data)), "\n", 2)[0]); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// running reports whether pid is a live process (not a zombie) that started at start (startOf): over a
// long soak PIDs wrap, and a PID recorded early may be another process's by the end.
func running(pid int, start string) bool {
	state, started := procStat(pid)
	return state != "" && state != "Z" && started == start
}

// startOf is when pid started, in clock ticks since boot ("" if it is gone).
func startOf(pid int) string {
	_, started := procStat(pid)
	return started
}

// procStat reads a process's state and start time from /proc/<pid>/stat: "pid (comm) S ..." where the
// fields after the last ')' begin with the state (field 3) and hold the start time at field 22.
func procStat(pid int) (state, started string) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", ""
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return "", ""
	}
	return fields[0], fields[19]
}
