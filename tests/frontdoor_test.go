package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// namedConfigMap is a ConfigMap called name holding v.
func namedConfigMap(name, v string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  v: %q\n", name, v)
}

// fleetStatus is the part of a GitRepo object's status the scenario reads, in Fleet's shape.
type fleetStatus struct {
	ObservedGeneration int64  `json:"observedGeneration"`
	Commit             string `json:"commit"`
	Display            struct {
		ReadyBundleDeployments string `json:"readyBundleDeployments"`
	} `json:"display"`
	Summary struct {
		Ready        int `json:"ready"`
		DesiredReady int `json:"desiredReady"`
	} `json:"summary"`
	ResourceCounts struct {
		Ready        int `json:"ready"`
		DesiredReady int `json:"desiredReady"`
	} `json:"resourceCounts"`
	ReadyClusters int `json:"readyClusters"`
	Conditions    []struct {
		Type, Status, Reason, Message string
	} `json:"conditions"`
}

func (s fleetStatus) condition(t string) (status, message string) {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status, c.Message
		}
	}
	return "", ""
}

func objectStatus(s *harness.Stack, kind, namespace, name string) (fleetStatus, int64, bool) {
	res := s.Kubectl("mgmt", "get", kind, name, "-n", namespace, "-o", "json")
	var obj struct {
		Metadata struct {
			Generation int64 `json:"generation"`
		} `json:"metadata"`
		Status fleetStatus `json:"status"`
	}
	if res.ExitCode != 0 || json.Unmarshal([]byte(res.Stdout), &obj) != nil {
		return fleetStatus{}, 0, false
	}
	return obj.Status, obj.Metadata.Generation, true
}

// A Fleet user's habits, end to end through the front door: a management cluster where flotilla-controller
// serves Fleet's kinds, a workload cluster registered by a Cluster object whose kubeconfig is a Secret, and
// a GitRepo of three bundles applied with kubectl. It deploys, `kubectl wait` sees it Ready, `kubectl get
// gitrepos -A` shows Fleet's columns with 3/3, and the CLI shows the same state but may not change it.
// Pause, forceSyncGeneration and delete go through kubectl; the controller killed with a change pending and
// started again hands the change over once: one Helm revision per release and change.
func TestFleetObjectsInAManagementClusterDriveFlotilla(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "mgmt"}, {Name: "edge"}}, ManagementCluster: "mgmt"})
	controller := s.StartController("mgmt")
	repo := s.NewRepo(map[string]string{
		"one/cm.yaml": namedConfigMap("one", "1"), "two/cm.yaml": namedConfigMap("two", "1"), "three/cm.yaml": namedConfigMap("three", "1"),
	})

	s.KubectlRun("mgmt", "create", "namespace", "team-a")
	kubeconfig := filepath.Join(s.Dir, "edge-inline.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, s.InlineKubeconfig("edge"), 0o600))
	s.KubectlRun("mgmt", "-n", "team-a", "create", "secret", "generic", "edge-kubeconfig", "--from-file=value="+kubeconfig)
	s.KubectlRun("mgmt", "apply", "-f", s.ApplyFile(`apiVersion: fleet.cattle.io/v1alpha1
kind: Cluster
metadata:
  name: edge
  namespace: team-a
  labels: {env: test}
spec:
  kubeConfigSecret: edge-kubeconfig
---
apiVersion: fleet.cattle.io/v1alpha1
kind: ClusterGroup
metadata:
  name: tested
  namespace: team-a
spec:
  selector: {matchLabels: {env: test}}
`))
	gitRepo := func(extra string) string {
		return strings.Replace(harness.GitRepoYAML("web", repo.URL(), extra), "  name: web\n", "  name: web\n  namespace: team-a\n", 1)
	}
	s.KubectlRun("mgmt", "apply", "-f", s.ApplyFile(gitRepo("  targets:\n  - clusterGroup: tested\n")))

	wait := s.Kubectl("mgmt", "wait", "--for=condition=Ready", "gitrepo/web", "-n", "team-a", "--timeout=3m")
	require.Equal(t, 0, wait.ExitCode, "kubectl wait: %s", wait.Stderr)
	for _, cm := range []string{"one", "two", "three"} {
		require.Equal(t, "1", s.ConfigMapData("edge", "default", cm)["v"], cm)
	}
	listing := s.KubectlRun("mgmt", "get", "gitrepos", "-A")
	require.Regexp(t, `NAMESPACE\s+NAME\s+REPO\s+COMMIT\s+BUNDLEDEPLOYMENTS-READY\s+STATUS\s+AGE`, listing)
	require.Regexp(t, regexp.MustCompile(`team-a\s+web\s+`+regexp.QuoteMeta(repo.URL())+`\s+[0-9a-f]{40}\s+3/3\s`), listing)
	st, generation, _ := objectStatus(s, "gitrepo", "team-a", "web")
	require.Equal(t, generation, st.ObservedGeneration)
	require.Equal(t, 1, st.ReadyClusters)
	require.Equal(t, 3, st.Summary.Ready)
	require.Equal(t, 3, st.ResourceCounts.Ready)
	accepted, _ := st.condition("Accepted")
	require.Equal(t, "True", accepted)
	require.Equal(t, "True", s.KubectlRun("mgmt", "get", "clusters.fleet.cattle.io", "edge", "-n", "team-a", "-o",
		`jsonpath={.status.conditions[?(@.type=="Ready")].status}`), "the Cluster object is registered")

	// One source of truth: the CLI reads the same state, and refuses to change it behind the object.
	key := api.KeyOf("team-a", "web")
	fromCLI := s.WaitStatusOf(key, time.Minute, "ready", harness.AllReady)
	require.Equal(t, st.Commit, fromCLI.Commit)
	require.Equal(t, st.ReadyClusters, fromCLI.ReadyClusters)
	res := s.CLI("apply", "-f", s.ApplyFile(gitRepo("  paused: true\n")))
	require.Equal(t, 1, res.ExitCode, res.Stdout)
	require.Contains(t, res.Stderr, `gitrepo "team-a/web" is managed by its GitRepo object team-a/web in the management cluster`)
	res = s.CLI("pause", "-n", "team-a", "web")
	require.Equal(t, 1, res.ExitCode, res.Stdout)
	require.Contains(t, res.Stderr, "kubectl -n team-a edit gitrepo web")
	res = s.CLI("cluster", "remove", "-n", "team-a", "edge")
	require.NotEqual(t, 0, res.ExitCode, res.Stdout)
	require.Contains(t, res.Stderr, `cluster "team-a/edge" is managed by its Cluster object team-a/edge in the management cluster`)
	require.Contains(t, s.CLIRun("cluster", "list", "-n", "team-a"), "secret edge-kubeconfig")

	// Paused through the object: a new commit is seen and held back.
	s.KubectlRun("mgmt", "-n", "team-a", "patch", "gitrepo", "web", "--type=merge", "-p", `{"spec":{"paused":true}}`)
	s.WaitStatusOf(key, time.Minute, "paused", func(st api.GitRepoStatus) bool { return st.Paused })
	second := repo.Commit(map[string]string{"one/cm.yaml": namedConfigMap("one", "2")}, "v2")
	s.WaitStatusOf(key, time.Minute, "OutOfSync while paused", func(st api.GitRepoStatus) bool {
		return st.Commit == second && st.State == api.StateOutOfSync
	})
	require.Equal(t, "1", s.ConfigMapData("edge", "default", "one")["v"])
	s.KubectlRun("mgmt", "-n", "team-a", "patch", "gitrepo", "web", "--type=merge", "-p", `{"spec":{"paused":false}}`)
	s.WaitStatusOf(key, time.Minute, "v2 after resume", func(st api.GitRepoStatus) bool { return st.Commit == second && harness.AllReady(st) })
	require.Equal(t, "2", s.ConfigMapData("edge", "default", "one")["v"])
	revisions := func() map[string]int {
		out := map[string]int{}
		for name, rel := range s.ReleasesOf("edge", key) {
			out[name] = rel.Revision
		}
		return out
	}
	before := revisions()
	require.Len(t, before, 3)

	// forceSyncGeneration redeploys every bundle once, with the controller killed before it could hand the
	// change over: started again, it reads the object and hands the change over once.
	require.NoError(t, controller.Kill())
	s.KubectlRun("mgmt", "-n", "team-a", "patch", "gitrepo", "web", "--type=merge", "-p", `{"spec":{"forceSyncGeneration":1}}`)
	s.StartController("mgmt")
	require.Eventually(t, func() bool {
		st, generation, ok := objectStatus(s, "gitrepo", "team-a", "web")
		ready, _ := st.condition("Ready")
		return ok && st.ObservedGeneration == generation && ready == "True"
	}, harness.Patience(3*time.Minute), 200*time.Millisecond, "the new generation observed and Ready")
	s.WaitStatusOf(key, time.Minute, "redeployed", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && len(st.Clusters) == 1 && st.Clusters[0].SyncGeneration == 1
	})
	after := revisions()
	for name, rev := range before {
		assert.Equal(t, rev+1, after[name], "release %s: one revision for one forceSyncGeneration", name)
	}

	// Deleting the object uninstalls as `flotilla delete` does; kubectl waits for the finalizer.
	del := s.Kubectl("mgmt", "-n", "team-a", "delete", "gitrepo", "web", "--timeout=3m")
	require.Equal(t, 0, del.ExitCode, "kubectl delete: %s", del.Stderr)
	require.Empty(t, s.ReleasesOf("edge", key))
	require.Nil(t, s.ConfigMapData("edge", "default", "one"))
}

// Kubernetes decides who may write a workspace's GitRepos: a user bound to team-a's namespace may create
// one there and is forbidden in team-b. A GitRepoRestriction refuses a repository outside its patterns,
// with the reason in the object's status, and nothing runs for it.
func TestRBACAndGitRepoRestrictionsGuardTheWorkspaces(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "mgmt"}}, ManagementCluster: "mgmt"})
	s.StartController("mgmt")
	for _, ns := range []string{"team-a", "team-b"} {
		s.KubectlRun("mgmt", "create", "namespace", ns)
	}
	s.KubectlRun("mgmt", "-n", "team-a", "create", "role", "gitrepo-editor", "--verb=get,list,watch,create,update,patch,delete",
		"--resource=gitrepos.fleet.cattle.io")
	s.KubectlRun("mgmt", "-n", "team-a", "create", "rolebinding", "alice-edits-gitrepos", "--role=gitrepo-editor", "--user=alice")
	doc := func(ns, repo string) string {
		return strings.Replace(harness.GitRepoYAML("app", repo, ""), "  name: app\n", "  name: app\n  namespace: "+ns+"\n", 1)
	}

	allowed := s.Kubectl("mgmt", "--as=alice", "apply", "--dry-run=server", "-f", s.ApplyFile(doc("team-a", "https://git.example.com/team-a/app.git")))
	require.Equal(t, 0, allowed.ExitCode, "alice may write team-a's GitRepos: %s", allowed.Stderr)
	forbidden := s.Kubectl("mgmt", "--as=alice", "apply", "-f", s.ApplyFile(doc("team-b", "https://git.example.com/team-a/app.git")))
	require.NotEqual(t, 0, forbidden.ExitCode)
	require.Contains(t, forbidden.Stderr, `User "alice" cannot get resource "gitrepos" in API group "fleet.cattle.io" in the namespace "team-b"`)

	s.KubectlRun("mgmt", "apply", "-f", s.ApplyFile(`apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepoRestriction
metadata:
  name: team-b-repos
  namespace: team-b
allowedRepoPatterns:
- ^https://git\.example\.com/team-b/
`))
	s.KubectlRun("mgmt", "apply", "-f", s.ApplyFile(doc("team-b", "https://git.example.com/team-a/app.git")))
	var st fleetStatus
	require.Eventually(t, func() bool {
		var ok bool
		st, _, ok = objectStatus(s, "gitrepo", "team-b", "app")
		accepted, _ := st.condition("Accepted")
		return ok && accepted == "False"
	}, harness.Patience(2*time.Minute), 200*time.Millisecond, "the restriction's refusal in the status")
	_, message := st.condition("Accepted")
	require.Equal(t, `disallowed repo https://git.example.com/team-a/app.git: not in allowed set [^https://git\.example\.com/team-b/] `+
		`(GitRepoRestriction "team-b-repos")`, message)
	ready, _ := st.condition("Ready")
	require.Equal(t, "False", ready)
	require.Contains(t, s.KubectlRun("mgmt", "get", "gitrepos", "-n", "team-b"), "disallowed repo")
	_, err := s.StatusOf(api.KeyOf("team-b", "app"))
	require.Error(t, err, "nothing runs for a refused GitRepo")

	// The restriction lifted, the GitRepo is admitted and runs (its repository, which does not exist, is
	// the workflow's error to report, not the admission's).
	s.KubectlRun("mgmt", "-n", "team-b", "delete", "gitreporestriction", "team-b-repos")
	require.Eventually(t, func() bool {
		st, _, ok := objectStatus(s, "gitrepo", "team-b", "app")
		accepted, _ := st.condition("Accepted")
		return ok && accepted == "True"
	}, harness.Patience(2*time.Minute), 200*time.Millisecond, "admitted once the restriction is gone")
	_, err = s.StatusOf(api.KeyOf("team-b", "app"))
	require.NoError(t, err)
}

// A HelmOp object deploys a chart from a Helm repository, templated with the values of its Cluster object,
// and `kubectl get helmops` prints Fleet's columns: the chart, the version the constraint resolved to and
// the bundle deployments ready.
func TestAHelmOpObjectDeploysItsChart(t *testing.T) {
	t.Parallel()
	repo, creds := startChartRepo(t)
	publish(t, repo, "web", "1.0.0")
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "mgmt"}, {Name: "k"}}, ManagementCluster: "mgmt",
		WorkerArgs: []string{"--credentials", creds}})
	s.StartController("mgmt")
	kubeconfig := filepath.Join(s.Dir, "k-inline.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, s.InlineKubeconfig("k"), 0o600))
	s.KubectlRun("mgmt", "create", "namespace", "fleet-default")
	s.KubectlRun("mgmt", "-n", "fleet-default", "create", "secret", "generic", "k-kubeconfig", "--from-file=value="+kubeconfig)
	s.KubectlRun("mgmt", "apply", "-f", s.ApplyFile(`apiVersion: fleet.cattle.io/v1alpha1
kind: Cluster
metadata: {name: one, namespace: fleet-default}
spec:
  kubeConfigSecret: k-kubeconfig
  templateValues: {greeting: hi-one}
`))
	s.KubectlRun("mgmt", "apply", "-n", "fleet-default", "-f", s.ApplyFile(helmOpYAML("hello", repo.URL, "hello")))

	wait := s.Kubectl("mgmt", "wait", "--for=condition=Ready", "helmop/hello", "-n", "fleet-default", "--timeout=3m")
	require.Equal(t, 0, wait.ExitCode, "kubectl wait: %s", wait.Stderr)
	listing := s.KubectlRun("mgmt", "get", "helmops", "-A")
	require.Regexp(t, `NAMESPACE\s+NAME\s+REPO\s+CHART\s+VERSION\s+BUNDLEDEPLOYMENTS-READY\s+STATUS`, listing)
	require.Regexp(t, `fleet-default\s+hello\s+\S+\s+web\s+1\.0\.0\s+1/1\s`, listing)
	require.Equal(t, "hi-one", s.ConfigMapData("k", "default", "hello-web")["message"])
	require.Contains(t, s.CLIRun("get", "helmops"), "hello")
}
