package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/render"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

// The counters come from Prometheus text: labelled and bare series are summed, a metric that merely
// shares the name's prefix is not, and the filter sees each series' labels.
func TestPromSumAddsOnlyTheNamedCounter(t *testing.T) {
	text := strings.Join([]string{
		`# HELP apiserver_request_total Counter of apiserver requests`,
		`apiserver_request_total{code="200",resource="configmaps",verb="POST"} 30`,
		`apiserver_request_total{code="200",resource="leases",verb="PUT"} 1000`,
		`apiserver_request_total{code="201",resource="secrets",verb="POST"} 12`,
		`apiserver_request_total_sum 99999`,
		`apiserver_request_duration_seconds_count{verb="GET"} 77`,
		`apiserver_request_total 5`,
	}, "\n")
	all, err := promSum(strings.NewReader(text), "apiserver_request_total", nil)
	require.NoError(t, err)
	require.Equal(t, 1047.0, all)

	clients, err := promSum(strings.NewReader(text), "apiserver_request_total", func(l string) bool { return !isAPIServerHousekeeping(l) })
	require.NoError(t, err)
	require.Equal(t, 47.0, clients, "the API server's own lease renewals are not Flotilla's requests")
}

// A target is judged only on the shape it was set for: a quick run's smaller rows carry no verdict,
// and a missed target is reported, not hidden.
func TestTargetsAreJudgedOnlyOnTheirOwnShape(t *testing.T) {
	quick := Result{Experiment: "deploy-50x50", Clusters: 10, Bundles: 10, FlotillaSeconds: 500}
	judge(&quick)
	require.Nil(t, quick.TargetMet)

	slow := Result{Experiment: "deploy-50x50", Clusters: 50, Bundles: 50, FlotillaSeconds: 51}
	judge(&slow)
	require.NotNil(t, slow.TargetMet)
	require.False(t, *slow.TargetMet)
	require.Equal(t, "≤ 50 s; ratio ≤ 1.30", slow.Target)

	shape := Result{Experiment: "fleet-shape-1x10x3", Clusters: 3, Bundles: 1, FlotillaSeconds: 0.9, Ratio: ptr(1.2)}
	judge(&shape)
	require.True(t, *shape.TargetMet)
	require.NotContains(t, details(shape), "Fleet", "no figure this run did not measure is printed beside it")

	ratio := Result{Experiment: "deploy-1x10", Clusters: 100, Ratio: ptr(1.31)}
	judge(&ratio)
	require.False(t, *ratio.TargetMet)

	few := Result{Experiment: "idle-check", Clusters: 10, TemporalActionsPerClusterInterval: ptr(1.0), APIRequestsPerClusterInterval: ptr(1.0),
		WorkerRSSMBPerCluster: ptr(9.0)}
	judge(&few)
	require.Nil(t, few.TargetMet, "the worker's base memory over ten clusters says nothing about a fleet")

	idle := Result{Experiment: "idle-check", Clusters: 100, TemporalActionsPerClusterInterval: ptr(1.0), APIRequestsPerClusterInterval: ptr(6.0),
		WorkerRSSMBPerCluster: ptr(0.2)}
	judge(&idle)
	require.False(t, *idle.TargetMet, "every idle bound must hold, API requests included")
}

// Every deployment shape is held to 1.3 times its own direct loop besides any goal of its own, and
// fanout-1000 to 50 s above the slower of its direct loop and the orchestration floor at its size.
func TestDeploymentShapesAreJudgedAgainstTheirDirectLoop(t *testing.T) {
	fleetShape := Result{Experiment: "fleet-shape-1x10x3", Clusters: 3, Bundles: 1, FlotillaSeconds: 0.9, Ratio: ptr(2.5)}
	judge(&fleetShape)
	require.Equal(t, "≤ 1.5 s; ratio ≤ 1.30", fleetShape.Target)
	require.False(t, *fleetShape.TargetMet, "inside Fleet's figure, but 2.5 times the direct loop")

	atLine := Result{Experiment: "fleet-shape-50x3", Clusters: 3, Bundles: 50, FlotillaSeconds: 5, Ratio: ptr(1.3)}
	judge(&atLine)
	require.True(t, *atLine.TargetMet)

	unmeasured := Result{Experiment: "deploy-1x10", Clusters: 10, FlotillaSeconds: 1}
	judge(&unmeasured)
	require.Equal(t, "ratio ≤ 1.30", unmeasured.Target)
	require.False(t, *unmeasured.TargetMet, "no baseline, no verdict in its favour")

	fan := Result{Experiment: "fanout-1000", Clusters: 1000, FlotillaSeconds: 140, DirectSeconds: ptr(95.0), FloorSeconds: ptr(38.0),
		OverheadSeconds: ptr(45.0)}
	judge(&fan)
	require.Equal(t, "≤ 50 s above max(direct, floor)", fan.Target)
	require.True(t, *fan.TargetMet)

	noFloor := Result{Experiment: "fanout-1000", Clusters: 1000, FlotillaSeconds: 100}
	judge(&noFloor)
	require.False(t, *noFloor.TargetMet)

	quick := Result{Experiment: "fanout-1000", Clusters: 50, OverheadSeconds: ptr(500.0)}
	judge(&quick)
	require.Nil(t, quick.TargetMet)
}

// remote-chart-100 is judged on its remote row at full scale, on both goals: the time against the
// vendored chart and the archive fetched once.
func TestRemoteChartIsJudgedOnRatioAndArchiveGets(t *testing.T) {
	git := Result{Experiment: "remote-chart-100", Clusters: 100, ChartSource: chartSourceGit, FlotillaSeconds: 10}
	judge(&git)
	require.Nil(t, git.TargetMet, "the vendored row is the baseline")

	quick := Result{Experiment: "remote-chart-100", Clusters: 5, ChartSource: chartSourceHelmRepo, Ratio: ptr(3.0), ChartArchiveGets: ptr(1)}
	judge(&quick)
	require.Nil(t, quick.TargetMet)

	fast := Result{Experiment: "remote-chart-100", Clusters: 100, ChartSource: chartSourceHelmRepo, Ratio: ptr(1.04), ChartArchiveGets: ptr(2), Rollouts: 2}
	judge(&fast)
	require.True(t, *fast.TargetMet, "one GET by each rollout's worker")

	twice := Result{Experiment: "remote-chart-100", Clusters: 100, ChartSource: chartSourceHelmRepo, Ratio: ptr(1.0), ChartArchiveGets: ptr(2), Rollouts: 1}
	judge(&twice)
	require.False(t, *twice.TargetMet, "one worker fetched the archive twice")

	perCluster := Result{Experiment: "remote-chart-100", Clusters: 100, ChartSource: chartSourceHelmRepo, Ratio: ptr(1.0), ChartArchiveGets: ptr(200), Rollouts: 2}
	judge(&perCluster)
	require.False(t, *perCluster.TargetMet, "an archive fetched per cluster misses the goal however fast")

	slow := Result{Experiment: "remote-chart-100", Clusters: 100, ChartSource: chartSourceHelmRepo, Ratio: ptr(1.06), ChartArchiveGets: ptr(2), Rollouts: 2}
	judge(&slow)
	require.False(t, *slow.TargetMet)
}

// A side's row is the mean of its rollouts, with every rollout's time kept and the GETs of all its workers.
func TestRemoteChartRowIsTheMeanOfItsRollouts(t *testing.T) {
	row := meanRollouts([]Result{
		{FlotillaSeconds: 20, DiscoveredSeconds: ptr(0.5), WorkerPeakRSSMB: 150, TemporalActions: 900, WorkerCPUSeconds: 8, ChartArchiveGets: ptr(1), ChartIndexGets: ptr(2)},
		{FlotillaSeconds: 30, DiscoveredSeconds: ptr(0.7), WorkerPeakRSSMB: 170, TemporalActions: 1000, WorkerCPUSeconds: 9, ChartArchiveGets: ptr(1), ChartIndexGets: ptr(1)},
	})
	require.Equal(t, 25.0, row.FlotillaSeconds)
	require.Equal(t, 0.6, *row.DiscoveredSeconds)
	require.Equal(t, 170.0, row.WorkerPeakRSSMB, "the highest peak, not a mean of peaks")
	require.Equal(t, int64(950), row.TemporalActions)
	require.Equal(t, 8.5, row.WorkerCPUSeconds)
	require.Equal(t, 2, *row.ChartArchiveGets)
	require.Equal(t, 3, *row.ChartIndexGets)
	require.Equal(t, 2, row.Rollouts)
	require.Equal(t, "rollouts 20.00 s, 30.00 s", row.Notes)
}

// Both sides of remote-chart-100 deploy the same chart: the vendored folder loads to exactly the files
// of the archive the Helm repository serves, and renders the same ten ConfigMaps.
func TestVendoredBenchChartIsTheServedArchive(t *testing.T) {
	archive, err := testchart.Package(benchChart())
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "repo")
	commit, err := writeChartRepo(dir, "helm:\n  releaseName: web\n", archive)
	require.NoError(t, err)

	served, err := loader.LoadArchive(bytes.NewReader(archive))
	require.NoError(t, err)
	vendored, err := render.LoadRepoChart(dir, "bundles/web")
	require.NoError(t, err)
	files := func(c *chart.Chart) map[string]string {
		out := map[string]string{}
		for _, f := range append(append(append([]*chart.File{}, c.Raw...), c.Templates...), c.Files...) {
			out[f.Name] = string(f.Data)
		}
		return out
	}
	require.Equal(t, files(served), files(vendored))
	require.Equal(t, served.Metadata, vendored.Metadata)

	refs, err := bundle.Discover(dir, "bench", []string{"bundles"})
	require.NoError(t, err)
	require.Len(t, refs, 1)
	b, err := bundle.Load(dir, refs[0])
	require.NoError(t, err)
	rel, err := render.ForCluster(render.Input{RepoRoot: dir, Bundle: b, GitRepo: "bench", Commit: commit,
		Cluster: fleet.ClusterInfo{Name: "sim-1", Namespace: fleet.DefaultNamespace, ConfineToNamespace: "sim-1"}})
	require.NoError(t, err)
	out, err := render.Template(rel, render.TemplateOptions{})
	require.NoError(t, err)
	require.Equal(t, benchChartPayloads+1, strings.Count(string(out), "kind: ConfigMap"))
	require.Greater(t, len(out), benchChartPayloads*10*1024)
}

func TestReportNamesTheExperimentsThatCouldNotBeMeasured(t *testing.T) {
	rep := Report{Results: []Result{{Experiment: "deploy-1x10"}, {Experiment: "recovery", Failed: true}}}
	require.Equal(t, []string{"recovery"}, rep.Failed())
}

// The generated repository is what every experiment deploys: each bundle is discovered and renders
// to exactly its ConfigMaps, about 10 KB each as in Fleet's benchmark data.
func TestBenchmarkRepositoryHoldsTheRequestedBundles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	commit, err := writeRepo(dir, 3, 4)
	require.NoError(t, err)
	require.Len(t, commit, 40)

	refs, err := bundle.Discover(dir, "bench", []string{"bundles"})
	require.NoError(t, err)
	require.Len(t, refs, 3)
	for _, ref := range refs {
		b, err := bundle.Load(dir, ref)
		require.NoError(t, err)
		rel, err := render.ForCluster(render.Input{RepoRoot: dir, Bundle: b, GitRepo: "bench", Commit: commit,
			Cluster: fleet.ClusterInfo{Name: "sim-1", Namespace: fleet.DefaultNamespace, ConfineToNamespace: "sim-1"}})
		require.NoError(t, err)
		require.Equal(t, "sim-1", rel.Namespace)
		out, err := render.Template(rel, render.TemplateOptions{})
		require.NoError(t, err)
		require.Equal(t, 4, strings.Count(string(out), "kind: ConfigMap"), "bundle %s", ref.Name)
		require.Greater(t, len(out), 4*10*1024)
	}
	_, err = os.Stat(filepath.Join(dir, ".git"))
	require.NoError(t, err)
}

// agents-50x3 is judged on its agent row at full scale, on the ratio alone: the kubeconfig row is the
// baseline, and the idle figures are reported for the reader, with no target of their own.
func TestAgentsIsJudgedOnItsAgentRowsRatio(t *testing.T) {
	kube := Result{Experiment: "agents-50x3", Clusters: 3, Bundles: 50, ClusterAccess: accessKubeconfig, FlotillaSeconds: 6}
	judge(&kube)
	require.Nil(t, kube.TargetMet, "the kubeconfig row is the baseline")

	quick := Result{Experiment: "agents-50x3", Clusters: 2, Bundles: 5, ClusterAccess: accessAgent, Ratio: ptr(2.0)}
	judge(&quick)
	require.Nil(t, quick.TargetMet, "at five bundles the fixed cost of a package fetch is most of a rollout")

	atLine := Result{Experiment: "agents-50x3", Clusters: 3, Bundles: 50, ClusterAccess: accessAgent, Ratio: ptr(1.3),
		TemporalActionsPerClusterInterval: ptr(9.0), APIRequestsPerClusterInterval: ptr(90.0)}
	judge(&atLine)
	require.True(t, *atLine.TargetMet, "idle costs, however high, are reported, not judged")
	require.Equal(t, "agent / kubeconfig ≤ 1.30", atLine.Target)

	slow := Result{Experiment: "agents-50x3", Clusters: 3, Bundles: 50, ClusterAccess: accessAgent, Ratio: ptr(1.31)}
	judge(&slow)
	require.False(t, *slow.TargetMet)
}

// A side's row averages its rollouts' times and idle windows, counts the package fetches per rollout and
// keeps every fetch made while idle, which should be none.
func TestAgentsRowIsTheMeanOfItsRollouts(t *testing.T) {
	row := meanAccessRollouts([]Result{
		{FlotillaSeconds: 8, ClusterAccess: accessAgent, TemporalActionsPerClusterInterval: ptr(2.0), APIRequestsPerClusterInterval: ptr(40.0),
			CPUSecondsPerClusterInterval: ptr(0.1), Intervals: 10, CheckIntervalSeconds: 2, AgentCPUSeconds: ptr(3.0), AgentPeakRSSMB: ptr(90.0),
			ContentWorkflows: ptr(int64(150)), IdleContentWorkflows: ptr(int64(0))},
		{FlotillaSeconds: 10, ClusterAccess: accessAgent, TemporalActionsPerClusterInterval: ptr(3.0), APIRequestsPerClusterInterval: ptr(50.0),
			CPUSecondsPerClusterInterval: ptr(0.2), Intervals: 10.5, CheckIntervalSeconds: 2, AgentCPUSeconds: ptr(5.0), AgentPeakRSSMB: ptr(80.0),
			ContentWorkflows: ptr(int64(151)), IdleContentWorkflows: ptr(int64(1))},
	})
	require.Equal(t, 9.0, row.FlotillaSeconds)
	require.Equal(t, 2.5, *row.TemporalActionsPerClusterInterval)
	require.Equal(t, 45.0, *row.APIRequestsPerClusterInterval)
	require.Equal(t, 0.15, *row.CPUSecondsPerClusterInterval)
	require.Equal(t, 20.5, row.Intervals, "the intervals of both windows")
	require.Equal(t, 4.0, *row.AgentCPUSeconds)
	require.Equal(t, 90.0, *row.AgentPeakRSSMB, "the highest peak, not a mean of peaks")
	require.Equal(t, int64(151), *row.ContentWorkflows)
	require.Equal(t, int64(1), *row.IdleContentWorkflows)
	require.Nil(t, row.DiscoveredSeconds, "no plan time is measured here")
	require.Nil(t, row.ChartArchiveGets)
}

// deploy-50x50-2workers is judged at full scale on its ratio to one worker: equal time meets the goal,
// a slower second worker misses it, and a quick row carries no verdict.
func TestTwoWorkersIsJudgedOnTheirRatioToOne(t *testing.T) {
	quick := Result{Experiment: experimentTwoWorkers, Clusters: 10, Bundles: 10, Workers: 2, Ratio: ptr(0.5)}
	judge(&quick)
	require.Nil(t, quick.TargetMet)

	even := Result{Experiment: experimentTwoWorkers, Clusters: 50, Bundles: 50, Workers: 2, Ratio: ptr(1.0)}
	judge(&even)
	require.True(t, *even.TargetMet)
	require.Equal(t, "2 workers / 1 ≤ 1.00", even.Target)

	slower := Result{Experiment: experimentTwoWorkers, Clusters: 50, Bundles: 50, Workers: 2, Ratio: ptr(1.01)}
	judge(&slower)
	require.False(t, *slower.TargetMet)

	one := Result{Experiment: "deploy-50x50", Clusters: 50, Bundles: 50, FlotillaSeconds: 40, Ratio: ptr(3.0)}
	judge(&one)
	require.Equal(t, "≤ 50 s; ratio ≤ 1.30", one.Target, "the one-worker row keeps its own goal")
	require.False(t, *one.TargetMet, "in time, but three times its direct loop")
}

// Tasks are credited to a worker by the process ID its SDK identity starts with; a PID that merely
// ends the same way, or a killed generation's identity, is nobody's.
func TestTasksAreCreditedToTheWorkerOfTheirIdentity(t *testing.T) {
	counts := map[string]int64{"1234@bench@": 7, "5678@bench@": 3, "11234@bench@": 100, "999@bench@": 50}
	require.Equal(t, []int64{7, 3}, byWorker(counts, []int{1234, 5678}))
	require.Equal(t, []int64{0}, byWorker(map[string]int64{}, []int{1234}))
}

// Both workers must have completed an activity, or the row timed one worker twice: that is a broken
// experiment, not a slow one.
func TestAWorkerThatDidNothingBreaksTheExperiment(t *testing.T) {
	require.NoError(t, everyWorkerWorked([]int64{120, 1}))
	err := everyWorkerWorked([]int64{240, 0})
	require.ErrorContains(t, err, "worker 2 of 2 completed no activity (activities per worker 240/0)")
}

// The first worker of a run keeps the files and command line a one-worker run always had; the others get
// their own cache and log, and no listener from the environment that would clash with the first's.
func TestExtraWorkersGetTheirOwnFilesAndNoListeners(t *testing.T) {
	r := &run{workerArgs: []string{"--credentials", "c.yaml"}}
	require.Equal(t, "gitcache", workerFile("gitcache", 0))
	require.Equal(t, "worker.log", workerFile("worker.log", 0))
	require.Equal(t, "gitcache-2", workerFile("gitcache", 1))
	require.Equal(t, "worker-2.log", workerFile("worker.log", 1))
	require.Equal(t, []string{"--credentials", "c.yaml"}, r.workerArgsFor(0))
	require.Equal(t, []string{"--credentials", "c.yaml", "--pprof-listen=", "--metrics-listen="}, r.workerArgsFor(1))
	require.Equal(t, []string{"--credentials", "c.yaml"}, r.workerArgs, "the run's own arguments are not changed")
}

// A two-worker row prints both workers' shares and the one-worker time beside its own.
func TestTwoWorkersRowShowsEachWorkersShare(t *testing.T) {
	d := details(Result{Experiment: experimentTwoWorkers, Workers: 2, OneWorkerSeconds: ptr(40.0),
		WorkerActivities: []int64{300, 280}, WorkerWorkflowTasks: []int64{150, 140}})
	require.Contains(t, d, "2 workers on one task queue, 1 worker 40.00s; activities per worker 300/280, workflow tasks 150/140")
	require.NotContains(t, details(Result{Experiment: "deploy-50x50"}), "workers")
}

func TestAFullRunLeavesTheScaleExperimentsOutAndAQuickRunKeepsTheirHarnessWorking(t *testing.T) {
	full, err := selectExperiments(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(full, Experiments) {
		t.Errorf("make bench runs %v, want %v", full, Experiments)
	}
	quick, err := selectExperiments(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(quick, slices.Concat(Experiments, ScaleExperiments)) {
		t.Errorf("make bench-quick runs %v, want every experiment and the scale ones", quick)
	}
	scale, err := selectExperiments([]string{experimentFanout10000}, false)
	if err != nil || !slices.Equal(scale, []string{experimentFanout10000}) {
		t.Errorf("make bench-scale runs %v (%v), want fanout-10000 alone", scale, err)
	}
	if _, err := selectExperiments([]string{"fanout-100000"}, false); err == nil || !strings.Contains(err.Error(), `"fanout-100000"`) {
		t.Errorf("an unknown experiment: %v", err)
	}
}

// A deployment row's overhead is what it took above the slower of its direct loop and the empty workflow
// shape at its size; the floor's CPU is carried for the bound docs/performance.md derives from it.
func TestADeploymentRowsOverheadIsMeasuredFromItsDirectLoopOrTheFloor(t *testing.T) {
	floor := Result{Experiment: "orchestration-floor", FloorSeconds: ptr(24.0), WorkerCPUSeconds: 6, TemporalCPUSeconds: 30}
	fanout := Result{Experiment: "fanout-1000", Clusters: 1000, FlotillaSeconds: 124, DirectSeconds: ptr(64.0)}
	withOverhead(&fanout, floor)
	require.Equal(t, 60.0, *fanout.OverheadSeconds)
	require.Equal(t, 36.0, *fanout.FloorCPUSeconds)

	slowFloor := Result{Experiment: "deploy-1x10", Clusters: 10, FlotillaSeconds: 1.5, DirectSeconds: ptr(0.5)}
	withOverhead(&slowFloor, Result{FloorSeconds: ptr(1.0)})
	require.InDelta(t, 0.5, *slowFloor.OverheadSeconds, 1e-9, "measured from the floor when it is the slower")
}
