package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// Bundle names as Fleet generates them for GitRepo "multi" and paths [helm-multi-chart].
const (
	crdBundle       = "multi-helm-multi-chart-crd"
	appBundle       = "multi-helm-multi-chart-app"
	dashboardBundle = "multi-helm-multi-chart-dashboard"
)

// helmMultiChart is Fleet's helm-multi-chart layout with local charts. "crd" installs the Widget CRD and
// the Deployment of its operator, whose image is a cluster's templateValue; on these clusters no
// controller runs, so the operator is Ready only once the test writes its status, as a controller would.
// "app" creates a Widget, so it needs the CRD: it depends on "crd" by Fleet's generated name.
// "dashboard" depends, by a selector on labels, on anything labelled role=crd being Ready or NotReady.
func helmMultiChart() map[string]string {
	return map[string]string{
		"helm-multi-chart/crd/fleet.yaml": `labels: {role: crd}
defaultNamespace: widgets
helm:
  chart: ./chart
  releaseName: widgets-crd
  values:
    image: ${ .ClusterValues.operatorImage }
`,
		"helm-multi-chart/crd/chart/Chart.yaml": "apiVersion: v2\nname: widgets-crd\nversion: 0.1.0\n",
		"helm-multi-chart/crd/chart/templates/crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.demo.flotilla.dev
spec:
  group: demo.flotilla.dev
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`,
		"helm-multi-chart/crd/chart/templates/operator.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: widget-operator
spec:
  replicas: 1
  selector:
    matchLabels: {app: widget-operator}
  template:
    metadata:
      labels: {app: widget-operator}
    spec:
      containers:
      - name: operator
        image: {{ .Values.image }}
`,
		"helm-multi-chart/app/fleet.yaml": `defaultNamespace: widgets
helm:
  chart: ./chart
  releaseName: widgets
dependsOn:
- name: ` + crdBundle + `
`,
		"helm-multi-chart/app/chart/Chart.yaml": "apiVersion: v2\nname: widgets\nversion: 0.1.0\n",
		"helm-multi-chart/app/chart/templates/widget.yaml": "apiVersion: demo.flotilla.dev/v1\nkind: Widget\nmetadata:\n  name: first\n" +
			"spec:\n  size: 3\n",
		"helm-multi-chart/dashboard/fleet.yaml": `defaultNamespace: widgets
dependsOn:
- selector: {matchLabels: {role: crd}}
  acceptedStates: [Ready, NotReady]
`,
		"helm-multi-chart/dashboard/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dashboard\ndata:\n  title: Widgets\n",
	}
}

// markOperatorReady writes the status a Deployment controller would write once the operator's pod runs.
func markOperatorReady(t *testing.T, s *harness.Stack, backing string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deployments := s.Kube(backing).AppsV1().Deployments("widgets")
	d, err := deployments.Get(ctx, "widget-operator", metav1.GetOptions{})
	require.NoError(t, err)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		}}
	_, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func bundleOf(c api.ClusterStatus, name string) api.BundleStatus {
	for _, b := range c.Bundles {
		if b.Name == name {
			return b
		}
	}
	return api.BundleStatus{}
}

// waitsFor reports whether a cluster shows the app waiting, as WaitApplied, for the CRD bundle in state.
func waitsFor(c api.ClusterStatus, bundle, dependency, state string) bool {
	b := bundleOf(c, bundle)
	return b.State == api.StateWaitApplied && b.Message == fmt.Sprintf("waiting for bundle(s) %q (%s)", dependency, state)
}

// Fleet's dependsOn, on Fleet's helm-multi-chart layout: on each cluster the app waits, WaitApplied and
// not installed, until the CRD bundle is Ready on that same cluster, and is installed within seconds
// after it although the clusters check only every ten minutes; one cluster whose CRD bundle becomes ready
// goes ahead while the other still waits; on a third cluster, which lacks the CRD bundle's template
// value, the CRD bundle fails and what depends on it waits there alone. A selector with acceptedStates
// lets the dashboard in as soon as the CRD bundle is NotReady.
func TestADependentWaitsOnEachClusterUntilItsDependencyIsReadyThere(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}, {Name: "b"}}})
	dependentWaitsForItsDependency(t, s, helmMultiChart(), "")
	s.RecordHistories(map[string]string{"cluster-depends-on.json": api.ClusterWorkflowID("multi", "two")})
}

// The same, with both charts from a Helm repository (HTTPS, basic auth), as Fleet's helm-multi-chart
// installs rancher-monitoring and its CRD chart: the charts are resolved and pinned by the plan, and the
// order holds on every cluster.
func TestADependentFromAChartRepositoryWaitsForItsDependency(t *testing.T) {
	t.Parallel()
	repo, creds := startChartRepo(t)
	files := helmMultiChart()
	for _, c := range []struct{ dir, name string }{{"helm-multi-chart/crd", "widgets-crd"}, {"helm-multi-chart/app", "widgets"}} {
		_, err := repo.Publish(chartFromFiles(t, files, c.dir+"/chart"))
		require.NoError(t, err)
		fy := files[c.dir+"/fleet.yaml"]
		files[c.dir+"/fleet.yaml"] = strings.Replace(fy, "  chart: ./chart\n",
			fmt.Sprintf("  repo: %s\n  chart: %s\n  version: \"~0.1\"\n", repo.URL, c.name), 1)
		for f := range files {
			if strings.HasPrefix(f, c.dir+"/chart/") {
				delete(files, f)
			}
		}
	}
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}, {Name: "b"}},
		WorkerArgs: []string{"--credentials", creds}})
	dependentWaitsForItsDependency(t, s, files, "charts")
	assertNowhere(t, s, chartRepoPassword)
}

// chartFromFiles is the chart in folder dir of files, as Helm loads it.
func chartFromFiles(t *testing.T, files map[string]string, dir string) *chart.Chart {
	t.Helper()
	var buffered []*loader.BufferedFile
	for name, data := range files {
		if strings.HasPrefix(name, dir+"/") {
			buffered = append(buffered, &loader.BufferedFile{Name: strings.TrimPrefix(name, dir+"/"), Data: []byte(data)})
		}
	}
	c, err := loader.LoadFiles(buffered)
	require.NoError(t, err)
	return c
}

func dependentWaitsForItsDependency(t *testing.T, s *harness.Stack, files map[string]string, helmSecret string) {
	t.Helper()
	operator := map[string]any{"operatorImage": "registry.example.com/widget-operator:1.0"}
	s.AddCluster("one", "a", map[string]string{"env": "prod"}, operator)
	s.AddCluster("two", "b", map[string]string{"env": "prod"}, operator)
	// Three shares a's API server, confined to its namespace, and has no operatorImage.
	s.Apply(`apiVersion: fleet.cattle.io/v1alpha1
kind: Cluster
metadata:
  name: three
  labels: {env: prod}
spec:
  kubeConfigPath: ` + s.K8s.Kubeconfig("a") + `
  confineToNamespace: three
`)
	repo := s.NewRepo(files)
	// A check interval far beyond the test's timeouts: only the checks of a cluster whose bundle waits
	// for a dependency can make the app follow its CRD bundle in time.
	s.StartGitRepo(api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "multi"}, Spec: fleet.GitRepoSpec{Repo: repo.URL(), Branch: "main",
			PollingInterval: "1s", Paths: []string{"helm-multi-chart"}, HelmSecretName: helmSecret,
			Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}}},
		Flotilla: &api.RunOptions{CheckInterval: "10m"},
	})

	// Everywhere the app waits, and nothing of it is installed.
	st := s.WaitStatus("multi", 3*time.Minute, "the app waiting on every cluster", func(st api.GitRepoStatus) bool {
		one, _ := harness.Cluster(st, "one")
		two, _ := harness.Cluster(st, "two")
		three, _ := harness.Cluster(st, "three")
		return bundleOf(one, crdBundle).State == api.StateNotReady && waitsFor(one, appBundle, crdBundle, api.StateNotReady) &&
			bundleOf(one, dashboardBundle).State == api.StateReady &&
			bundleOf(two, crdBundle).State == api.StateNotReady && waitsFor(two, appBundle, crdBundle, api.StateNotReady) &&
			bundleOf(two, dashboardBundle).State == api.StateReady &&
			bundleOf(three, crdBundle).State == api.StateErrApplied && waitsFor(three, appBundle, crdBundle, api.StateErrApplied) &&
			waitsFor(three, dashboardBundle, crdBundle, api.StateErrApplied)
	})
	require.Equal(t, api.StateWaitApplied, mustCluster(t, st, "one").State, "waiting is not an error")
	require.Equal(t, api.StateErrApplied, mustCluster(t, st, "three").State, "what fails there is")
	require.Contains(t, bundleOf(mustCluster(t, st, "three"), crdBundle).Message, `map has no entry for key "operatorImage"`)
	for _, backing := range []string{"a", "b"} {
		rels := s.Releases(backing, "multi")
		require.NotContains(t, rels, "widgets", "the app is not installed on %s while it waits", backing)
	}
	out := s.CLIRun("status", "multi")
	require.Contains(t, out, fmt.Sprintf("waiting for bundle(s) %q (NotReady)", crdBundle), "flotilla status shows the wait:\n%s", out)
	require.Contains(t, out, fmt.Sprintf("waiting for bundle(s) %q (ErrApplied)", crdBundle))

	// While a bundle waits for another to become ready, its cluster checks every few seconds, although its
	// check interval is ten minutes and the prompt checks after an apply back off towards it (six of
	// those would take over two minutes).
	s.WaitChecks("multi", "two", 6)

	// The operator becomes ready on one: the app follows there; two still waits.
	readyOnOne := time.Now()
	markOperatorReady(t, s, "a")
	st = s.WaitStatus("multi", 2*time.Minute, "one Ready", func(st api.GitRepoStatus) bool {
		one, _ := harness.Cluster(st, "one")
		return one.State == api.StateReady && bundleOf(one, appBundle).State == api.StateReady
	})
	two := mustCluster(t, st, "two")
	require.True(t, waitsFor(two, appBundle, crdBundle, api.StateNotReady), "two still waits: %+v", two)
	require.NotContains(t, s.Releases("b", "multi"), "widgets")
	installed := s.History("a", "widgets", "widgets")[0]
	require.True(t, installed.Updated.After(readyOnOne), "the app was installed on one (%s) after its CRD bundle was ready there (%s)",
		installed.Updated, readyOnOne)

	// Then on two.
	readyOnTwo := time.Now()
	markOperatorReady(t, s, "b")
	st = s.WaitStatus("multi", 2*time.Minute, "two Ready", func(st api.GitRepoStatus) bool {
		two, _ := harness.Cluster(st, "two")
		return two.State == api.StateReady
	})
	installed = s.History("b", "widgets", "widgets")[0]
	require.True(t, installed.Updated.After(readyOnTwo), "the app was installed on two after its CRD bundle was ready there")

	// Three is left as it was: its CRD bundle fails and everything that depends on it waits, uninstalled.
	three := mustCluster(t, st, "three")
	require.Equal(t, api.StateErrApplied, three.State)
	require.True(t, waitsFor(three, appBundle, crdBundle, api.StateErrApplied), "%+v", three)
	require.True(t, waitsFor(three, dashboardBundle, crdBundle, api.StateErrApplied), "%+v", three)
	for name, r := range s.Releases("a", "multi") {
		require.NotEqual(t, "three", r.Namespace, "release %s of cluster three", name)
	}
	require.True(t, strings.HasPrefix(st.Message, "2/3 clusters ready"), st.Message)
}

func mustCluster(t *testing.T, st api.GitRepoStatus, name string) api.ClusterStatus {
	t.Helper()
	c, ok := harness.Cluster(st, name)
	require.True(t, ok, "cluster %s in %+v", name, st.Clusters)
	return c
}
