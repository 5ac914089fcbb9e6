package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// The example GitRepo of `make up` lands on three clusters (prod through its agent, as `make up` runs it),
// each with its own templated values, and with
// the chart of `make up`'s chart repository (its own process, as `make up` runs it): a version published
// there later reaches every cluster at the next poll, as `make up` tells its user.
func TestExampleGitRepoDeploysToThreeClustersWithTheirOwnValues(t *testing.T) {
	t.Parallel()
	harness.RequireBinaries(t)
	envs := []string{"dev", "test", "prod"}
	var clusters []localk8s.ClusterOptions
	for _, e := range envs {
		clusters = append(clusters, localk8s.ClusterOptions{Name: e, Workloads: true})
	}
	charts, creds, devDir := startExampleChartRepo(t)
	v100, err := charts.Publish(devenv.ExampleChart, "1.0.0")
	require.NoError(t, err)
	s := harness.Start(t, harness.Options{Clusters: clusters, WorkerArgs: []string{"--credentials", creds}})
	repo := s.NewRepo(nil)
	repo.CopyExample(charts.URL)
	for _, e := range envs {
		var values map[string]any
		data, err := os.ReadFile(filepath.Join(harness.Root(), "examples", "clusters", e+".yaml"))
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(data, &values))
		if e == "prod" {
			// As `make up` registers it: in pull mode, reached only by its own agent.
			s.AddAgentCluster(e, map[string]string{"env": e}, values)
			s.StartAgent(e, e)
			continue
		}
		s.AddCluster(e, e, map[string]string{"env": e}, values)
	}
	gitrepo, err := os.ReadFile(filepath.Join(harness.Root(), "examples", "gitrepo.yaml"))
	require.NoError(t, err)
	s.Apply(strings.ReplaceAll(strings.ReplaceAll(string(gitrepo), "REPO_URL", repo.URL()), "15s", "1s"))

	st := s.WaitStatus("example", 3*time.Minute, "every cluster Ready", harness.AllReady)
	require.Equal(t, 3, st.DesiredReadyClusters)
	require.Equal(t, api.Summary{DesiredReady: 12, Ready: 12}, st.Summary, "4 bundles × 3 clusters")
	require.ElementsMatch(t, []string{"example-guestbook", "example-config", "example-podinfo-kustomize", "example-hello"}, st.Bundles)

	for _, e := range envs {
		rels := s.Releases(e, "example")
		require.Len(t, rels, 4, "helm list on %s", e)
		for name, r := range rels {
			require.Equal(t, "deployed", r.Status, "release %s on %s", name, e)
		}
		cm := s.ConfigMapData(e, "guestbook", "guestbook-config")
		require.Equal(t, "hello from "+e+" ("+e+")", cm["greeting"], "templated from .ClusterName and .ClusterLabels")
		require.Equal(t, e+".flotilla.example", cm["fqdn"], "templated from .ClusterValues")
		settings := s.ConfigMapData(e, "platform-config", "platform-settings")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		dep, err := s.Kube(e).AppsV1().Deployments("podinfo").Get(ctx, e+"-podinfo", metav1GetOptions)
		cancel()
		require.NoError(t, err, "kustomize overlay %s", e)
		if e == "prod" {
			require.Equal(t, "critical", cm["tier"], "targetCustomization for env=prod")
			require.Equal(t, "warn", settings["logLevel"], "yaml overlay for prod")
			require.EqualValues(t, 3, *dep.Spec.Replicas)
		} else {
			require.Equal(t, "standard", cm["tier"])
			require.Equal(t, "debug", settings["logLevel"])
		}
		require.Equal(t, *dep.Spec.Replicas, dep.Status.ReadyReplicas, "kwok makes the Deployment Ready on %s", e)
		hello := s.ConfigMapData(e, "hello", "hello-hello")
		require.Equal(t, "hello from "+e, hello["message"])
		require.Equal(t, "1.0.0", hello["version"])
		c, _ := harness.Cluster(st, e)
		require.Equal(t, v100.Digest, helloBundle(c).ChartDigest, "status names the archive %s deploys", e)
	}

	// What `make up` prints: `flotilla-dev chart-repo publish hello 1.1.0`, and the next poll deploys it.
	publish := exec.Command(filepath.Join(harness.BinDir(), "flotilla-dev"), "chart-repo", "publish", devenv.ExampleChart, "1.1.0")
	// flotilla-dev publishes into $FLOTILLA_DEV_DIR/chart-repo, as after `make up`.
	publish.Env = append(os.Environ(), "FLOTILLA_DEV_DIR="+devDir)
	out, err := publish.CombinedOutput()
	require.NoError(t, err, string(out))
	s.WaitStatus("example", 2*time.Minute, "hello 1.1.0 Ready on every cluster", func(st api.GitRepoStatus) bool {
		for _, e := range envs {
			c, _ := harness.Cluster(st, e)
			if b := helloBundle(c); b.State != api.StateReady || b.ChartVersion != "1.1.0" {
				return false
			}
		}
		return harness.AllReady(st)
	})
	for _, e := range envs {
		require.Equal(t, "1.1.0", s.ConfigMapData(e, "hello", "hello-hello")["version"], "on %s", e)
	}
}

// startExampleChartRepo runs `make up`'s chart repository as `make up` does, but on a free port and
// stopped with the test, and writes the worker's credentials file for it; dir is what FLOTILLA_DEV_DIR
// would be.
func startExampleChartRepo(t *testing.T) (charts *devenv.ChartRepo, creds, dir string) {
	t.Helper()
	bin := filepath.Join(harness.BinDir(), "flotilla-dev")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s missing: run `make build`", bin)
	}
	port, err := proc.FreePort()
	require.NoError(t, err)
	dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	charts, p, err := devenv.StartChartRepo(ctx, devenv.ChartRepoOptions{Bin: bin, Dir: filepath.Join(dir, "chart-repo"),
		Addr: fmt.Sprintf("127.0.0.1:%d", port), LogFile: filepath.Join(dir, "chart-repo.log")})
	if p != nil {
		t.Cleanup(func() { _ = p.Stop(5 * time.Second) })
	}
	require.NoError(t, err)
	data, err := charts.CredentialsYAML()
	require.NoError(t, err)
	creds = filepath.Join(dir, "credentials.yaml")
	require.NoError(t, os.WriteFile(creds, data, 0o600))
	return charts, creds, dir
}

func helloBundle(c api.ClusterStatus) api.BundleStatus {
	for _, b := range c.Bundles {
		if b.Name == "example-hello" {
			return b
		}
	}
	return api.BundleStatus{}
}

// Fleet's users report it (rancher/fleet#2943, #3277): one cluster lacking a template value must fail alone, visibly, and heal when the value arrives.
func TestMissingTemplateValueFailsOnlyThatCluster(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}, {Name: "b"}}})
	repo := s.NewRepo(fqdnBundle())
	s.AddCluster("edge-1", "a", map[string]string{"region": "edge"}, fqdnValues("edge-1.example.com"))
	s.AddCluster("edge-2", "b", map[string]string{"region": "edge"}, fqdnValues(""))
	s.Apply(harness.GitRepoYAML("edges", repo.URL(), `  paths: [web]
  targets:
  - clusterSelector: {matchLabels: {region: edge}}
`))

	st := s.WaitStatus("edges", 2*time.Minute, "edge-1 Ready and edge-2 failed", func(st api.GitRepoStatus) bool {
		one, _ := harness.Cluster(st, "edge-1")
		two, _ := harness.Cluster(st, "edge-2")
		return one.State == api.StateReady && two.State == api.StateErrApplied
	})
	require.Equal(t, 1, st.ReadyClusters)
	require.Equal(t, 2, st.DesiredReadyClusters)
	require.Contains(t, st.Message, "1/2 clusters ready")
	require.Contains(t, st.Message, `cluster "edge-2"`)
	require.Contains(t, st.Message, `map has no entry for key "fqdn"`)
	two, _ := harness.Cluster(st, "edge-2")
	require.Contains(t, two.Message, `bundle "edges-web"`)
	require.Contains(t, two.Message, `map has no entry for key "fqdn"`)
	require.Equal(t, "edge-1.example.com", s.ConfigMapData("a", "web", "web")["fqdn"], "the healthy cluster deployed")
	require.Nil(t, s.ConfigMapData("b", "web", "web"), "nothing half-rendered reached the failing cluster")

	// The CLI shows the same, by name.
	out := s.CLIRun("status", "edges")
	require.Contains(t, out, "edge-2")
	require.Contains(t, out, `map has no entry for key "fqdn"`)

	// The Web UI's list finds the failing GitRepo and the failing cluster's workflow by search attribute.
	require.Eventually(t, func() bool {
		return s.CountWorkflows("FlotillaGitRepo = 'edges' AND FlotillaHasError = true AND WorkflowType = 'GitRepoWorkflow'") == 1 &&
			s.CountWorkflows("FlotillaCluster = 'edge-2' AND FlotillaState = 'ErrApplied'") == 1
	}, harness.Patience(2*time.Minute), 250*time.Millisecond)

	// The value arrives; the next sync deploys it, with no restart.
	s.AddCluster("edge-2", "b", map[string]string{"region": "edge"}, fqdnValues("edge-2.example.com"))
	s.WaitStatus("edges", 2*time.Minute, "both clusters Ready", harness.AllReady)
	require.Equal(t, "edge-2.example.com", s.ConfigMapData("b", "web", "web")["fqdn"])
	// These histories are the replay fixtures of the current workflow shape. A cluster workflow started by
	// the GitRepo knows its shape from its input: no version marker, so no TemporalChangeVersion write.
	markers := s.MarkerNames(api.ClusterWorkflowID("edges", "edge-2"))
	require.NotEmpty(t, markers, "observations are local activity markers")
	require.NotContains(t, markers, "Version")
	s.RecordHistories(map[string]string{
		"gitrepo-missing-value.json": api.GitRepoWorkflowID("edges"),
		"cluster-missing-value.json": api.ClusterWorkflowID("edges", "edge-2"),
		"inventory.json":             "flotilla/inventory",
	})
}

// A new commit is deployed at the next poll; an unchanged commit costs one ls-remote: no clone, no plan,
// no new Helm revision.
func TestNewCommitDeploysAtNextPollAndUnchangedCommitChangesNothing(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	repo := s.NewRepo(map[string]string{
		"app/fleet.yaml": "defaultNamespace: app\n",
		"app/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  version: one\n",
	})
	s.AddCluster("a", "a", map[string]string{"env": "dev"}, nil)
	s.Apply(harness.GitRepoYAML("polling", repo.URL(), "  paths: [app]\n  targets: [{clusterName: a}]\n"))
	first := s.WaitStatus("polling", 2*time.Minute, "Ready", harness.AllReady)
	id := api.GitRepoWorkflowID("polling")

	// Several polls of the same commit. A poll is bounded by its activity's one-minute timeout and then
	// retried, so waiting for one a minute long fails on any attempt a loaded machine stalls.
	polled := first.LastPolled
	for i := 0; i < 4; i++ {
		st := s.WaitStatus("polling", 3*time.Minute, "another poll", func(st api.GitRepoStatus) bool { return st.LastPolled.After(polled) })
		polled = st.LastPolled
	}
	require.Equal(t, 1, s.ActivityCount(id, "Plan"), "an unchanged commit is never planned (cloned) again")
	require.Greater(t, s.ActivityCount(id, "Poll"), 4)
	require.Len(t, s.History("a", "app", "polling-app"), 1, "no new Helm revision for an unchanged commit")

	head := repo.Commit(map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  version: two\n"}, "two")
	s.WaitStatus("polling", 3*time.Minute, "the new commit Ready", func(st api.GitRepoStatus) bool {
		return st.Commit == head && harness.AllReady(st)
	})
	require.Equal(t, "two", s.ConfigMapData("a", "app", "app")["version"])
	require.Equal(t, 2, s.ActivityCount(id, "Plan"))
	require.Len(t, s.History("a", "app", "polling-app"), 2)

	// `flotilla history` reads the same two deployments from the cluster's workflow: the install at the
	// first commit, the upgrade at the second, each with its Helm revision; polls of an unchanged commit
	// deployed nothing.
	var hs []struct {
		Cluster     string           `json:"cluster"`
		Deployments []api.Deployment `json:"deployments"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.CLIRun("history", "polling", "-o", "json")), &hs))
	require.Len(t, hs, 1)
	require.Equal(t, "a", hs[0].Cluster)
	ds := hs[0].Deployments
	require.Len(t, ds, 2, "%+v", ds)
	require.Equal(t, first.Commit, ds[0].Commit)
	require.Equal(t, []api.DeployedBundle{{Bundle: "polling-app", Action: api.ActionInstall, Revision: 1}}, ds[0].Bundles)
	require.Equal(t, head, ds[1].Commit)
	require.Equal(t, []api.DeployedBundle{{Bundle: "polling-app", Action: api.ActionUpgrade, Revision: 2}}, ds[1].Bundles)
	require.False(t, ds[1].At.Before(ds[0].At))
	require.Regexp(t, `a\s.*\s`+api.ShortCommit(head)+`\s+polling-app\s+upgrade\s+-\s+2\s+ok\s`, s.CLIRun("history", "polling", "--cluster", "a"))
}

// The documented `temporal workflow start` input works against the dev server, and so does the status query.
func TestTemporalCLIStartsAGitRepoWithTheDocumentedJSON(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	repo := s.NewRepo(map[string]string{"hello/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\ndata:\n  a: b\n"})
	s.AddCluster("a", "a", map[string]string{"env": "dev"}, nil)
	input := `{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"GitRepo","metadata":{"name":"from-cli"},` +
		`"spec":{"repo":"` + repo.URL() + `","branch":"main","pollingInterval":"1s","targets":[{"clusterSelector":{"matchLabels":{"env":"dev"}}}]}}`
	out, err := s.TemporalCommand(t.Context(), "workflow", "start",
		"--type", "GitRepoWorkflow", "--task-queue", "flotilla", "--workflow-id", "gitrepo/from-cli", "--input", input).CombinedOutput()
	require.NoError(t, err, string(out))
	s.WaitStatus("from-cli", 2*time.Minute, "Ready", harness.AllReady)
	require.Equal(t, "b", s.ConfigMapData("a", "default", "hello")["a"])

	out, err = s.TemporalCommand(t.Context(), "workflow", "query",
		"--workflow-id", "gitrepo/from-cli", "--type", "status").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), `"readyClusters":1`)
}

// An Apply returns an observation of every bundle of the cluster, the ones it acted on and the ones it did
// not, and that is what the cluster reports next: the report that follows an Apply counts every bundle at
// its revision, with no observation of the workflow's own in between.
func TestTheReportAfterAnApplyCountsEveryBundleFromTheApplysObservation(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	configMap := func(bundle, version string) map[string]string {
		return map[string]string{
			bundle + "/fleet.yaml": "defaultNamespace: " + bundle + "\n",
			bundle + "/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + bundle + "\ndata:\n  version: \"" + version + "\"\n",
		}
	}
	files := map[string]string{}
	for _, b := range []string{"one", "two", "three"} {
		maps.Copy(files, configMap(b, "1"))
	}
	repo := s.NewRepo(files)
	s.AddCluster("a", "a", nil, nil)
	s.Apply(harness.GitRepoYAML("observed", repo.URL(), "  paths: [one, two, three]\n  targets: [{clusterName: a}]\n"))
	s.WaitStatus("observed", 2*time.Minute, "Ready", harness.AllReady)

	head := repo.Commit(configMap("two", "2"), "two changes alone")
	s.WaitStatus("observed", 2*time.Minute, "the new commit Ready", func(st api.GitRepoStatus) bool {
		return st.Commit == head && harness.AllReady(st)
	})

	applies := s.AppliesAndReports(api.ClusterWorkflowID("observed", "a"))
	require.Len(t, applies, 2, "the install and the upgrade of bundle two")
	require.Len(t, applies[0].Actions, 3)
	require.Equal(t, []api.BundleAction{{Bundle: "observed-two", Action: api.ActionUpgrade, ExpectedID: applies[1].Actions[0].ExpectedID}},
		applies[1].Actions, "bundles one and three are unchanged")
	for i, want := range []map[string]int{
		{"observed-one": 1, "observed-two": 1, "observed-three": 1},
		{"observed-one": 1, "observed-two": 2, "observed-three": 1},
	} {
		a := applies[i]
		require.Zero(t, a.ObservedBetween, "apply %d: the report is the Apply's own observation", i)
		require.Equal(t, api.StateReady, a.Report.Status.State, "apply %d: %+v", i, a.Report.Status)
		got := map[string]int{}
		for _, b := range a.Report.Status.Bundles {
			require.Equal(t, api.StateReady, b.State, "apply %d: bundle %s", i, b.Name)
			require.Equal(t, 1, b.ResourceCounts.Ready, "apply %d: bundle %s: its ConfigMap counted", i, b.Name)
			got[b.Name] = b.Revision
		}
		require.Equal(t, want, got, "apply %d: every bundle at its revision", i)
	}
}
