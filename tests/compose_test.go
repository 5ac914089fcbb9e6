package tests

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/gitserver"
)

// The stack users run with `docker-compose up` (PostgreSQL, the Temporal server on it with its schema set
// up, the Web UI, two workers, and an agent) deploys a private repository over HTTPS to real clusters:
// three registered by their mounted kubeconfigs, one in pull mode through the compose file's agent. One worker container is killed mid-rollout and the other finishes it, with
// one Helm revision per release; the PostgreSQL and Temporal containers are restarted and nothing is lost
// or redeployed, nor by a second `up`; the next commit still rolls out; `down -v` leaves no container,
// volume or network. It runs beside the other scenarios: it kills and restarts only its own containers,
// and waits on what the stack reports, not on a quiet machine.
func TestTheComposedStackRollsOutThroughAWorkerKillAndARestartedDatabase(t *testing.T) {
	t.Parallel()
	harness.RequireDocker(t)
	harness.RequireBinaries(t)
	bridge := harness.DockerBridgeIP(t)
	harness.BuildImages(t)
	dir := t.TempDir()

	clusters := []string{"edge-1", "edge-2", "edge-3", "edge-4"}
	var opts []localk8s.ClusterOptions
	for _, name := range clusters {
		opts = append(opts, localk8s.ClusterOptions{Name: name})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	k8s, err := localk8s.Start(ctx, localk8s.Options{Dir: filepath.Join(dir, "k8s"), BinDir: harness.BinDir(), Clusters: opts,
		Address: bridge, Logger: func(f string, a ...any) { t.Logf("localk8s: "+f, a...) }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = k8s.Stop() })
	kubeconfigs := filepath.Join(dir, "clusters")
	require.NoError(t, os.MkdirAll(kubeconfigs, 0o755))
	for _, name := range clusters {
		harness.ContainerKubeconfig(t, k8s.Kubeconfig(name), filepath.Join(kubeconfigs, name+".yaml"))
	}

	// A private repository over HTTPS on the bridge, its password in the mounted credentials folder.
	const password = "composed-pa55"
	repos := filepath.Join(dir, "repos")
	repo := filepath.Join(repos, "fleet")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	_, err = devenv.Git(repo, "init", "-q", "-b", "main")
	require.NoError(t, err)
	commitBundles(t, repo, "one")
	git, err := gitserver.StartHTTPSOn(bridge, repos, "flotilla", password)
	require.NoError(t, err)
	t.Cleanup(func() { _ = git.Close() })
	creds := filepath.Join(dir, "credentials")
	for k, v := range map[string]string{"username": "flotilla", "password": password} {
		require.NoError(t, os.MkdirAll(filepath.Join(creds, "git"), 0o755))
		// Readable by the image's user; the folder is the test's own.
		require.NoError(t, os.WriteFile(filepath.Join(creds, "git", k), []byte(v), 0o644))
	}

	temporalPort, uiPort := harness.FreePort(t), harness.FreePort(t)
	stack := harness.StartCompose(t, fmt.Sprintf("flotilla-e2e-%d", os.Getpid()), map[string]string{
		"TEMPORAL_PORT": temporalPort, "TEMPORAL_UI_PORT": uiPort, "FLOTILLA_WEBHOOK_PORT": harness.FreePort(t),
		"FLOTILLA_WEBHOOK_ADDRESS": "127.0.0.1", "POSTGRES_PASSWORD": "composed-db-pa55",
		"FLOTILLA_CLUSTERS_DIR": kubeconfigs, "FLOTILLA_CREDENTIALS_DIR": creds, "FLOTILLA_AGENT_CLUSTER": "edge-4",
	}, "agent")
	address := "127.0.0.1:" + temporalPort

	// `up` returns once containers run; the Web UI answers a moment later, through Temporal.
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://127.0.0.1:" + uiPort + "/api/v1/namespaces")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	}, harness.Patience(3*time.Minute), 250*time.Millisecond, "the Web UI answers")
	require.Contains(t, body, `"name": "default"`, "the Web UI reaches Temporal, whose namespace the stack created")

	// Clusters are registered as the compose file says: by the path their kubeconfig is mounted at, or in
	// pull mode for the one the stack's agent serves.
	for _, name := range clusters {
		how := []string{"--kubeconfig", "/etc/flotilla/clusters/" + name + ".yaml"}
		if name == "edge-4" {
			how = []string{"--agent"}
		}
		stack.MustRun(2*time.Minute, append([]string{"run", "--rm", "flotilla", "flotilla", "cluster", "add", name, "--label", "env=edge"}, how...)...)
	}

	c, err := client.Dial(client.Options{HostPort: address, Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	require.NoError(t, err)
	defer c.Close()
	// One cluster at a time, so that the rollout is still under way when a worker is killed.
	in := api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "composed"}, Spec: fleet.GitRepoSpec{
			Repo: git.RepoURL("fleet"), Branch: "main", Paths: []string{"bundles"}, PollingInterval: "1s",
			ClientSecretName: "git", CABundle: git.CA,
			Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "edge"}}}},
		}},
		Flotilla: &api.RunOptions{RolloutWindow: 1, CheckInterval: "2s"},
	}
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: api.GitRepoWorkflowID("composed"), TaskQueue: api.DefaultTaskQueue},
		api.GitRepoWorkflowType, in)
	require.NoError(t, err)

	killed := waitComposedStatus(t, c, 5*time.Minute, "the rollout under way", func(st api.GitRepoStatus) bool {
		return st.Commit != "" && st.DesiredReadyClusters == len(clusters) && st.ReadyClusters < len(clusters)
	})
	stack.MustRun(time.Minute, "kill", "flotilla-worker-1")
	t.Logf("killed flotilla-worker-1 with %d/%d clusters ready", killed.ReadyClusters, killed.DesiredReadyClusters)
	first := waitComposedStatus(t, c, 5*time.Minute, "every cluster ready after the kill", harness.AllReady)
	pool := agentclient.NewPool(nil)
	revisions := func() map[string]int {
		out := map[string]int{}
		for _, name := range clusters {
			hc, err := pool.Get(agentclient.Config{KubeconfigPath: k8s.Kubeconfig(name)})
			require.NoError(t, err)
			lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
			rels, err := hc.ListReleases(lctx, map[string]string{api.LabelGitRepo: "composed"})
			lcancel()
			require.NoError(t, err)
			for _, r := range rels {
				out[name+"/"+r.Name] = r.Revision
			}
		}
		return out
	}
	deployed := revisions()
	require.Len(t, deployed, len(clusters)*3, "three bundles on each cluster")
	for rel, rev := range deployed {
		assert.Equal(t, 1, rev, "%s: one Helm revision, though a worker died during the rollout", rel)
	}
	require.Equal(t, "one", configMapValue(t, k8s, "edge-4"))

	// PostgreSQL and Temporal restart under the running workflows: nothing is lost or redeployed.
	stack.MustRun(3*time.Minute, "restart", "postgresql", "temporal")
	restarted := time.Now()
	waitComposedStatus(t, c, 5*time.Minute, "Ready at the same commit after the restart", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.Commit == first.Commit
	})
	// Each cluster workflow has checked its releases since: they found nothing to do.
	for _, name := range clusters {
		require.Eventually(t, func() bool {
			qctx, qcancel := context.WithTimeout(ctx, 10*time.Second)
			defer qcancel()
			v, err := c.QueryWorkflow(qctx, api.ClusterWorkflowID("composed", name), "", api.QueryStatus)
			var cs api.ClusterStatus
			return err == nil && v.Get(&cs) == nil && cs.LastChecked.After(restarted) && cs.State == api.StateReady
		}, harness.Patience(3*time.Minute), 250*time.Millisecond, "cluster %s checked again after the restart", name)
	}
	require.Equal(t, deployed, revisions(), "the restart redeployed nothing")

	// A second `up`, as after an upgrade or a changed setting, runs the schema and namespace setup again over
	// the databases and namespace that exist: both succeed and change nothing, and nothing is redeployed.
	stack.MustRun(10*time.Minute, "up", "-d", "--no-build")
	schemaLog := stack.MustRun(time.Minute, "logs", "--no-color", "temporal-schema")
	require.Equal(t, 2, strings.Count(schemaLog, "temporal-schema: database temporal_visibility is at the current"), "the schema setup ran twice:\n%s", schemaLog)
	require.Contains(t, stack.MustRun(time.Minute, "logs", "--no-color", "temporal-namespace"), "temporal-namespace: namespace default exists")
	waitComposedStatus(t, c, 5*time.Minute, "Ready at the same commit after a second up", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.Commit == first.Commit
	})
	require.Equal(t, deployed, revisions(), "a second up redeployed nothing")

	// The next commit rolls out on the restarted stack, once per release.
	next := commitBundles(t, repo, "two")
	waitComposedStatus(t, c, 5*time.Minute, "the next commit everywhere", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.Commit == next
	})
	for rel, rev := range revisions() {
		assert.Equal(t, 2, rev, "%s: one more revision for one more commit", rel)
	}
	require.Equal(t, "two", configMapValue(t, k8s, "edge-1"))

	// A wrong database password stops the schema setup at once, saying which database, where and as whom.
	out, err := stack.Run(2*time.Minute, "run", "--rm", "-e", "SQL_PASSWORD=not-the-password", "temporal-schema")
	require.Error(t, err, "the schema setup fails:\n%s", out)
	require.Contains(t, out, "temporal-schema: cannot create database temporal on postgresql:5432 as temporal:", out)
	require.Contains(t, out, "password authentication failed for user", out)

	stack.MustRun(3*time.Minute, "down", "-v", "--remove-orphans", "--timeout", "5")
	require.Empty(t, stack.Leftovers(), "down -v leaves no container, volume or network of the project")
}

// commitBundles writes three bundles of one ConfigMap each, all carrying v, and commits them.
func commitBundles(t *testing.T, repo, v string) string {
	t.Helper()
	for _, b := range []string{"alpha", "beta", "gamma"} {
		d := filepath.Join(repo, "bundles", b)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "fleet.yaml"), []byte("defaultNamespace: composed\n"), 0o644))
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  v: %q\n", b, v)
		require.NoError(t, os.WriteFile(filepath.Join(d, "cm.yaml"), []byte(cm), 0o644))
	}
	commit, err := devenv.Commit(repo, v)
	require.NoError(t, err)
	return commit
}

func configMapValue(t *testing.T, k8s *localk8s.Env, cluster string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", k8s.Kubeconfig(cluster))
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm, err := kube.CoreV1().ConfigMaps("composed").Get(ctx, "alpha", metav1.GetOptions{})
	require.NoError(t, err)
	return cm.Data["v"]
}

// waitComposedStatus polls the GitRepo's status query until cond holds; errors while Temporal restarts are
// retried, and the last status is shown if cond never holds.
func waitComposedStatus(t *testing.T, c client.Client, timeout time.Duration, what string, cond func(api.GitRepoStatus) bool) api.GitRepoStatus {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last api.GitRepoStatus
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := c.QueryWorkflow(ctx, api.GitRepoWorkflowID("composed"), "", api.QueryStatus)
		cancel()
		if err == nil {
			var st api.GitRepoStatus
			if err = v.Get(&st); err == nil {
				last = st
				if cond(st) {
					return st
				}
			}
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("gitrepo composed: %s not reached within %s (last error %v); last status: %+v", what, timeout, lastErr,
		strings.ReplaceAll(fmt.Sprintf("%+v", last), "\n", " "))
	return last
}
