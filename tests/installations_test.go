package tests

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
	"github.com/flotilla-gitops/flotilla/webhook"
)

// Two installations share one Temporal namespace, told apart only by their task queues. Each registers a
// cluster called "edge" (each on a kube-apiserver of its own) and a GitRepo of the same repository; each
// sees, lists and deploys only its own. A push reaches only the GitRepo of the installation whose webhook
// received it, and a GitRepo name one installation runs is refused to the other.
func TestTwoInstallationsOnOneNamespaceEachSeeAndDeployOnlyTheirOwn(t *testing.T) {
	t.Parallel()
	const secret = "e2e-installations-secret"
	secretFile := filepath.Join(t.TempDir(), "webhook-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret), 0o600))
	hookAddr := freeLoopbackAddr(t)
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "kube-a"}, {Name: "kube-b"}}})
	a := s.Installation() // the default task queue, as every installation before this one
	b := s.StartInstallation("flotilla-b", "--webhook-listen", hookAddr, "--webhook-secret-file", secretFile)
	require.Equal(t, "flotilla", a.TaskQueue)

	configMap := func(version string) map[string]string {
		return map[string]string{
			"app/fleet.yaml": "defaultNamespace: app\n",
			"app/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  version: " + version + "\n",
		}
	}
	repo := s.NewRepo(configMap("one"))
	// Without --replace: an add is refused when the inventory already holds the name, so the second add
	// succeeds only because each installation has an inventory of its own.
	a.CLIRun("cluster", "add", "edge", "--kubeconfig", s.K8s.Kubeconfig("kube-a"))
	b.CLIRun("cluster", "add", "edge", "--kubeconfig", s.K8s.Kubeconfig("kube-b"))
	// Hourly polling: from here on a commit arrives only through a webhook or `flotilla sync`.
	gitRepo := func(name string) string {
		return "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: " + name + "\nspec:\n  repo: " + repo.URL() +
			"\n  branch: main\n  pollingInterval: 1h\n  paths: [app]\n  targets:\n  - clusterName: edge\n"
	}
	a.CLIRun("apply", "-f", s.ApplyFile(gitRepo("alpha")))
	b.CLIRun("apply", "-f", s.ApplyFile(gitRepo("beta")))
	first := s.WaitStatus("alpha", 2*time.Minute, "Ready", harness.AllReady)
	s.WaitStatus("beta", 2*time.Minute, "Ready", harness.AllReady)

	// Deploys: each GitRepo reached the edge of its own installation only.
	require.NotEmpty(t, s.Releases("kube-a", "alpha"))
	require.Empty(t, s.Releases("kube-a", "beta"))
	require.NotEmpty(t, s.Releases("kube-b", "beta"))
	require.Empty(t, s.Releases("kube-b", "alpha"))

	// Inventory: one "edge" each, on its own kube-apiserver.
	require.Equal(t, map[string]string{"edge": s.K8s.Kubeconfig("kube-a")}, clusterList(t, a))
	require.Equal(t, map[string]string{"edge": s.K8s.Kubeconfig("kube-b")}, clusterList(t, b))

	// get gitrepos and status: each sees its own GitRepo; the other's is refused by name.
	require.Equal(t, []string{"alpha"}, gitRepoNames(t, a))
	require.Equal(t, []string{"beta"}, gitRepoNames(t, b))
	require.Contains(t, a.CLIRun("status", "alpha"), "edge")
	require.Contains(t, b.CLIRun("status", "beta"), "edge")
	res := a.CLI("status", "beta")
	require.Equal(t, 1, res.ExitCode)
	require.Contains(t, res.Stderr, `gitrepo "beta" belongs to the Flotilla installation on task queue "flotilla-b"`)

	// A GitRepo name is the namespace's: b can neither take alpha over nor delete it.
	res = b.CLI("apply", "-f", s.ApplyFile(gitRepo("alpha")))
	require.Equal(t, 1, res.ExitCode, res.Stdout)
	require.Contains(t, res.Stderr, `gitrepo "alpha" belongs to the Flotilla installation on task queue "flotilla"`)
	res = b.CLI("delete", "alpha")
	require.Equal(t, 1, res.ExitCode, res.Stdout)
	require.Contains(t, res.Stderr, `gitrepo "alpha" belongs to the Flotilla installation on task queue "flotilla"`)

	// A push to the shared repository, delivered to b's webhook, syncs b's GitRepo and not a's.
	second := repo.Commit(configMap("two"), "two")
	alphaPolls := s.ActivityCount(api.GitRepoWorkflowID("alpha"), "Poll")
	push := githubPush(repo.URL(), "refs/heads/main")
	code, synced := postHook(t, "http://"+hookAddr+webhook.Path, githubHeaders("push", sign(secret, push)), push)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []string{"beta"}, synced.Synced)
	s.WaitStatus("beta", 2*time.Minute, "the pushed commit Ready", func(st api.GitRepoStatus) bool {
		return st.Commit == second && harness.AllReady(st)
	})
	require.Equal(t, "two", s.ConfigMapData("kube-b", "app", "app")["version"])
	require.Equal(t, alphaPolls, s.ActivityCount(api.GitRepoWorkflowID("alpha"), "Poll"), "b's webhook did not poll a's GitRepo")
	st, err := s.Status("alpha")
	require.NoError(t, err)
	require.Equal(t, first.Commit, st.Commit)
	require.Equal(t, "one", s.ConfigMapData("kube-a", "app", "app")["version"])

	// a's GitRepo takes the same commit when a asks: it was left alone, not unable to.
	a.CLIRun("sync", "alpha")
	s.WaitStatus("alpha", 2*time.Minute, "the new commit Ready", func(st api.GitRepoStatus) bool {
		return st.Commit == second && harness.AllReady(st)
	})
	require.Equal(t, "two", s.ConfigMapData("kube-a", "app", "app")["version"])
}

// clusterList is `flotilla cluster list` of an installation: each cluster's kubeconfig by name.
func clusterList(t *testing.T, i *harness.Installation) map[string]string {
	t.Helper()
	var inv struct {
		Clusters []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				KubeConfigPath string `json:"kubeConfigPath"`
			} `json:"spec"`
		} `json:"clusters"`
	}
	require.NoError(t, json.Unmarshal([]byte(i.CLIRun("cluster", "list", "-o", "json")), &inv))
	out := map[string]string{}
	for _, c := range inv.Clusters {
		out[c.Metadata.Name] = c.Spec.KubeConfigPath
	}
	return out
}

// gitRepoNames is `flotilla get gitrepos` of an installation: the names it lists.
func gitRepoNames(t *testing.T, i *harness.Installation) []string {
	t.Helper()
	var rows []struct {
		Name string `json:"name"`
	}
	require.NoError(t, json.Unmarshal([]byte(i.CLIRun("get", "gitrepos", "-o", "json")), &rows))
	names := []string{}
	for _, r := range rows {
		names = append(names, r.Name)
	}
	return names
}
