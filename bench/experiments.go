package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// Targets from the issue, printed beside the measured values.
const (
	// targetDirectRatio bounds every deployment shape against its own direct baseline (issue 36, item 3).
	targetDirectRatio      = 1.3
	targetFleetShape1x10x3 = 1.5
	targetFleetShape50x3   = 20.0
	targetDeploy50x50      = 50.0
	// targetFanout1000Overhead bounds what fanout-1000 takes above max(direct, orchestration floor).
	targetFanout1000Overhead   = 50.0
	targetIdleActions          = 2.0
	targetIdleAPIRequests      = 5.0
	targetWorkerMBPerCluster   = 1.0
	targetRemoteChartRatio     = 1.05
	targetStatusSeconds        = 1.0
	recoveryKillFraction       = 0.25
	defaultDeployTimeout       = 10 * time.Minute
	defaultGitRepoPollInterval = "15s"
)

// deployCase is one GitRepo deployed to a set of clusters, measured against the direct baseline.
type deployCase struct {
	experiment string
	// tag names the clusters, the GitRepo and the namespaces of this case; unique within a benchmark run.
	tag                     string
	clusters, bundles, cms  int
	simulate                bool
	direct                  bool
	checkInterval           time.Duration
	killWorkerAfterFraction float64
	// directRenderOnly makes the baseline stop after rendering (gitrepo-50-bundles).
	directRenderOnly bool
	// keep leaves Temporal and the worker running for a following measurement (idle-check).
	keep    bool
	timeout time.Duration
	// writeRepo writes the repository into a folder and returns its commit; nil writes `bundles` bundles
	// of `cms` ConfigMaps (writeRepo).
	writeRepo func(dir string) (string, error)
	// helmSecretName names the worker's credentials for the GitRepo's charts (spec.helmSecretName).
	helmSecretName string
	// workerArgs are added to the worker's command line (its credentials file).
	workerArgs []string
	// agents registers every cluster in pull mode, each with a flotilla-agent of its own (agents-50x3).
	agents bool
	// workers is how many flotilla-worker processes share the run's Temporal and task queue (0 means 1).
	workers int
}

func (e *env) deploy(ctx context.Context, dc deployCase) (Result, *run, error) {
	clusters, err := e.layout(dc.tag, dc.clusters, dc.simulate)
	if err != nil {
		return Result{}, nil, err
	}
	for i := range clusters {
		clusters[i].Agent = dc.agents
	}
	simulated := clusters[0].Namespace != ""
	repoDir := filepath.Join(e.dir, "repos", dc.tag)
	write := dc.writeRepo
	if write == nil {
		write = func(dir string) (string, error) { return writeRepo(dir, dc.bundles, dc.cms) }
	}
	commit, err := write(repoDir)
	if err != nil {
		return Result{}, nil, err
	}
	res := Result{Experiment: dc.experiment, Clusters: dc.clusters, Bundles: dc.bundles, ResourcesPerCluster: dc.bundles * dc.cms,
		RealAPIServers: min(dc.clusters, len(e.apiservers)), SimulatedClusters: simulated, Quick: e.cfg.Quick}
	if dc.workers > 1 {
		res.Workers = dc.workers
	}
	if simulated {
		res.RealAPIServers = len(e.apiservers)
	}
	if dc.direct {
		if err := e.directPhase(ctx, dc, clusters, repoDir, dc.directRenderOnly, &res); err != nil {
			return res, nil, fmt.Errorf("%s: direct baseline: %w", dc.tag, err)
		}
	}

	r, err := e.startRun(ctx, dc.tag, clusters, map[string]string{"bench": dc.tag}, dc.workerArgs, dc.workers)
	if err != nil {
		return res, nil, err
	}
	ok := false
	defer func() {
		if !ok || !dc.keep {
			r.stop()
		}
	}()
	in := api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: dc.tag}, Spec: fleet.GitRepoSpec{
			Repo: "file://" + repoDir, Branch: "main", Paths: []string{"bundles"}, PollingInterval: defaultGitRepoPollInterval,
			HelmSecretName: dc.helmSecretName,
			Targets:        []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": dc.tag}}}},
		}},
	}
	if !simulated {
		in.Spec.TargetNamespace = "bmf-" + dc.tag
	}
	if dc.checkInterval > 0 {
		in.Flotilla = &api.RunOptions{CheckInterval: dc.checkInterval.String()}
	}
	timeout := dc.timeout
	if timeout == 0 {
		timeout = defaultDeployTimeout
	}
	before, err := r.snapshot(ctx)
	if err != nil {
		return res, nil, err
	}
	if dir := os.Getenv("BENCH_WORKER_PROFILE"); dir != "" {
		go profileWorker(filepath.Join(dir, dc.tag+".cpu.prof"), dc.timeout)
	}
	t0 := time.Now()
	if err := r.startGitRepo(ctx, in); err != nil {
		return res, nil, err
	}
	killed := false
	var killedAt time.Duration
	progress := func(ready int) error {
		if dc.killWorkerAfterFraction == 0 || killed || float64(ready) < dc.killWorkerAfterFraction*float64(dc.clusters) {
			return nil
		}
		killed, killedAt = true, time.Since(t0)
		e.logf("  %s: %d/%d clusters ready at %.1fs: SIGKILL the worker, start it again", dc.tag, ready, dc.clusters, killedAt.Seconds())
		if err := r.killWorker(); err != nil {
			return err
		}
		return r.startWorker(ctx)
	}
	t1, err := r.waitAllReady(ctx, dc.tag, dc.clusters, dc.bundles, commit, timeout, progress)
	if err != nil {
		return res, nil, fmt.Errorf("%s: %w", dc.tag, err)
	}
	after, err := r.snapshot(ctx)
	if err != nil {
		return res, nil, err
	}
	res.FlotillaSeconds = round(t1.Sub(t0).Seconds(), 2)
	fillPhase(&res, diff(before, after), after)
	if res.DirectSeconds != nil {
		res.Ratio = ptr(round(res.FlotillaSeconds / *res.DirectSeconds, 2))
	}
	if os.Getenv("BENCH_TIMELINES") != "" {
		_ = r.writeTimeline(ctx, api.GitRepoWorkflowID(dc.tag))
		_ = r.writeTimeline(ctx, api.ClusterWorkflowID(dc.tag, clusters[0].Name))
		_ = r.writeTimeline(ctx, api.ClusterWorkflowID(dc.tag, clusters[len(clusters)-1].Name))
	}
	if ev, runs, err := r.historyEvents(ctx, api.GitRepoWorkflowID(dc.tag)); err == nil {
		res.GitRepoHistoryEvents, res.GitRepoRuns = ev, runs
	}
	if dc.killWorkerAfterFraction > 0 {
		if !killed {
			return res, nil, fmt.Errorf("%s: every cluster was ready before the worker could be killed", dc.tag)
		}
		res.KilledAtSeconds = ptr(round(killedAt.Seconds(), 1))
		dup, err := e.duplicatedRevisions(ctx, clusters, in.Spec.TargetNamespace)
		if err != nil {
			return res, nil, err
		}
		res.DuplicatedRevisions = ptr(dup)
	}
	e.logf("  %s: %d clusters × %d bundles Ready in %.2fs (direct %s)", dc.tag, dc.clusters, dc.bundles, res.FlotillaSeconds, fmtPtr(res.DirectSeconds))
	ok = true
	return res, r, nil
}

func fmtPtr(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fs", *v)
}

// fillPhase copies a measured phase into a result.
func fillPhase(res *Result, d delta, end snapshot) {
	res.TemporalActions = int64(d.actions)
	res.APIRequests = int64(d.apiRequests)
	res.WorkerCPUSeconds = round(d.worker, 2)
	res.TemporalCPUSeconds = round(d.temporal, 2)
	res.APIServerCPUSeconds = round(d.kube, 2)
	res.EtcdCPUSeconds = round(d.etcd, 2)
	res.WorkerPeakRSSMB = round(end.workerPeakMB, 1)
	if end.agentCount > 0 {
		res.AgentCPUSeconds, res.AgentPeakRSSMB = ptr(round(d.agents, 2)), ptr(round(end.agentPeakMB, 1))
	}
}

// directPhase runs the direct baseline on the same API servers, in namespaces of its own.
func (e *env) directPhase(ctx context.Context, dc deployCase, clusters []benchCluster, repoDir string, renderOnly bool, res *Result) error {
	dclusters := make([]benchCluster, len(clusters))
	for i, c := range clusters {
		dclusters[i] = c
		if c.Namespace != "" {
			dclusters[i].Namespace = "d-" + c.Namespace
		}
	}
	targetNS := ""
	if clusters[0].Namespace == "" {
		targetNS = "bmd-" + dc.tag
	}
	before, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	if dir := os.Getenv("BENCH_DIRECT_PROFILE"); dir != "" {
		f, err := os.Create(filepath.Join(dir, dc.tag+".direct.cpu.prof"))
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	// The baseline's releases are owned by a GitRepo of their own name: labelled as the measured GitRepo's,
	// they were that GitRepo's releases its target does not have, and its first check swept all of them
	// (50 serial uninstalls, 4 s of fleet-shape-50x3, counted against Flotilla; docs/performance.md).
	took, err := runDirect(ctx, directSpec{cacheDir: filepath.Join(e.dir, "direct-cache", dc.tag), repoURL: "file://" + repoDir,
		gitRepo: directGitRepo(dc.tag), clusters: dclusters, targetNamespace: targetNS, renderOnly: renderOnly})
	if err != nil {
		return err
	}
	after, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	d := diff(before, after)
	res.DirectSeconds = ptr(round(took.Seconds(), 2))
	res.DirectCPUSeconds = ptr(round(d.bench+d.kube+d.etcd, 2))
	res.DirectProcessCPUSeconds = ptr(round(d.bench, 2))
	res.DirectAPIRequests = ptr(int64(d.apiRequests))
	return nil
}

// directGitRepo is the name the direct baseline labels its releases with: never the measured GitRepo's.
func directGitRepo(tag string) string { return "direct-" + tag }

// duplicatedRevisions counts the releases of an experiment holding more than one Helm revision (one
// commit was deployed, so one revision each), from the Helm Secrets' labels on every API server.
func (e *env) duplicatedRevisions(ctx context.Context, clusters []benchCluster, targetNamespace string) (int, error) {
	namespaces := map[string]bool{}
	for _, c := range clusters {
		if c.Namespace != "" {
			namespaces[c.Namespace] = true
		}
	}
	if targetNamespace != "" {
		namespaces[targetNamespace] = true
	}
	dup := 0
	for _, name := range e.apiservers {
		cfg, err := restConfig(e.k8s.Kubeconfig(name))
		if err != nil {
			return 0, err
		}
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			return 0, err
		}
		list, err := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(metav1.NamespaceAll).
			List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
		if err != nil {
			return 0, err
		}
		for _, s := range list.Items {
			if !namespaces[s.Namespace] {
				continue
			}
			if v, _ := strconv.Atoi(s.Labels["version"]); v > 1 {
				dup++
			}
		}
	}
	return dup, nil
}

// gitRepo50Bundles measures discovery and rendering of 50 bundles for one cluster, as Fleet's
// create-1-gitrepo-50-bundle measures the creation of 50 Bundles. flotilla_seconds ends when the cluster
// workflow's first Observe (which renders every bundle) completes; the run then goes on to Ready.
func (e *env) gitRepo50Bundles(ctx context.Context) (Result, error) {
	const tag = "gr50"
	res, r, err := e.deploy(ctx, deployCase{experiment: "gitrepo-50-bundles", tag: tag, clusters: 1, bundles: 50, cms: 1,
		direct: true, directRenderOnly: true, keep: true})
	if err != nil {
		return res, err
	}
	defer r.stop()
	start, plan, err := r.activityCompletion(ctx, api.GitRepoWorkflowID(tag), "Plan")
	if err != nil {
		return res, err
	}
	_, observed, err := r.activityCompletion(ctx, api.ClusterWorkflowID(tag, tag+"-0000"), "Observe")
	if err != nil {
		return res, err
	}
	ready := res.FlotillaSeconds
	res.DiscoveredSeconds = ptr(round(plan.Sub(start).Seconds(), 2))
	res.FlotillaSeconds = round(observed.Sub(start).Seconds(), 2)
	res.Ratio = ptr(round(res.FlotillaSeconds / *res.DirectSeconds, 2))
	res.Notes = fmt.Sprintf("all Ready in %.2fs; timed from the workflow's start event; direct = clone, discover, render", ready)
	return res, nil
}

// activityCompletion returns a workflow's start time and when its first activity of a type completed.
func (r *run) activityCompletion(ctx context.Context, workflowID, activityType string) (time.Time, time.Time, error) {
	it := r.client.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]string{}
	var start time.Time
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return start, time.Time{}, err
		}
		if start.IsZero() {
			start = ev.GetEventTime().AsTime()
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] == activityType {
			return start, ev.GetEventTime().AsTime(), nil
		}
		// A local activity (Observe is one) leaves a marker, recorded when its workflow task completed.
		if m := ev.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "LocalActivity" && m.GetFailure() == nil &&
			localActivityType(m.GetDetails()["data"]) == activityType {
			return start, ev.GetEventTime().AsTime(), nil
		}
	}
	return start, time.Time{}, fmt.Errorf("%s: no completed %s activity", workflowID, activityType)
}

// idleCheck deploys one bundle of ten ConfigMaps to n clusters, lets them sit in sync, and measures a
// few check intervals: Temporal actions, API requests and CPU per cluster per interval, worker memory.
func (e *env) idleCheck(ctx context.Context, n int, interval time.Duration, intervals int) (Result, error) {
	res, r, err := e.deploy(ctx, deployCase{experiment: "idle-check", tag: fmt.Sprintf("idle%d", n), clusters: n, bundles: 1, cms: 10,
		simulate: n > len(e.apiservers), checkInterval: interval, keep: true, timeout: defaultDeployTimeout})
	if err != nil {
		return res, err
	}
	defer r.stop()
	// Let the last clusters' post-apply checks finish before the window opens.
	time.Sleep(2 * time.Second)
	window := time.Duration(intervals) * interval
	e.logf("  idle%d: all in sync; measuring %d check intervals of %s", n, intervals, interval)
	before, err := r.snapshot(ctx)
	if err != nil {
		return res, err
	}
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(window):
	}
	after, err := r.snapshot(ctx)
	if err != nil {
		return res, err
	}
	d := diff(before, after)
	ci := float64(n) * d.seconds / interval.Seconds()
	fillPhase(&res, d, after)
	res.FlotillaSeconds = round(d.seconds, 2)
	res.CheckIntervalSeconds = interval.Seconds()
	res.Intervals = round(d.seconds/interval.Seconds(), 2)
	res.TemporalActionsPerClusterInterval = ptr(round(d.actions/ci, 3))
	res.APIRequestsPerClusterInterval = ptr(round(d.apiRequests/ci, 3))
	res.CPUSecondsPerClusterInterval = ptr(round((d.worker+d.temporal+d.kube+d.etcd)/ci, 5))
	res.WorkerRSSMBPerCluster = ptr(round(after.workerPeakMB/float64(n), 3))
	res.Notes = fmt.Sprintf("worker RSS now %.0f MB", after.workerCurrentMB)
	return res, nil
}

// profileWorker saves a CPU profile of a worker started with FLOTILLA_PPROF_LISTEN (a debugging aid).
func profileWorker(path string, d time.Duration) {
	secs := 15
	if v, err := strconv.Atoi(os.Getenv("BENCH_WORKER_PROFILE_SECONDS")); err == nil {
		secs = v
	}
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", os.Getenv("FLOTILLA_PPROF_LISTEN"), secs))
	if err != nil {
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	_ = os.WriteFile(path, data, 0o644)
}

// localActivityType reads the activity type from a local activity marker's data.
func localActivityType(data *commonpb.Payloads) string {
	for _, p := range data.GetPayloads() {
		var d struct{ ActivityType string }
		if json.Unmarshal(p.GetData(), &d) == nil && d.ActivityType != "" {
			return d.ActivityType
		}
	}
	return ""
}
