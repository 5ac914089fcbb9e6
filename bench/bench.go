// Package bench runs Flotilla's benchmarks: experiments shaped like Rancher Fleet's, each measured
// against a direct-Helm baseline in the same run, on real kube-apiservers and, past what one machine can
// run, on simulated clusters (several Flotilla clusters on one API server, each confined to its own
// namespace with spec.confineToNamespace, as Fleet's agent simulators share one). See docs/performance.md.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Config selects and places a benchmark run.
type Config struct {
	// BinDir holds temporal, etcd, kube-apiserver and flotilla-worker.
	BinDir string
	// WorkDir holds every cluster, database, repository and log of the run.
	WorkDir string
	// Experiments to run (names from Experiments); empty means all.
	Experiments []string
	// Quick runs every experiment at a small scale, in a few minutes (CI keeps the harness working).
	Quick bool
	// APIServers is the number of real kube-apiservers (0: 10, quick: 3).
	APIServers int
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// TemporalDynamicConfig is passed to the dev server (`--dynamic-config-value`); nil means
	// TunedTemporal, an empty map the dev server's defaults.
	TemporalDynamicConfig map[string]string
	// NoFloor leaves the orchestration floor off the deployment rows (a comparison of two builds reads
	// only their times).
	NoFloor bool
}

// TunedTemporal is how the benchmark configures the Temporal dev server for one worker process: one
// task queue partition (the default four only make a single poller forward tasks between partitions)
// and eager activity execution (an activity scheduled by a workflow task goes back in that task's reply,
// skipping a trip through matching). A Temporal deployment for Flotilla would set the same.
var TunedTemporal = map[string]string{
	"matching.numTaskqueueReadPartitions":  "1",
	"matching.numTaskqueueWritePartitions": "1",
	"system.enableActivityEagerExecution":  "true",
}

// Experiments lists every experiment in the order a run performs them.
var Experiments = []string{
	"fleet-shape-1x10x3", "fleet-shape-50x3", "gitrepo-50-bundles", "deploy-1x10", "deploy-50x50", experimentTwoWorkers, "recovery",
	"fanout-1000", "idle-check", "orchestration-floor", "remote-chart-100", "agents-50x3",
}

// Run performs the selected experiments and returns their results; an experiment that fails is
// reported as an error row and the others still run.
func Run(ctx context.Context, cfg Config) (Report, error) {
	rep := Report{Date: time.Now().UTC(), Machine: machine(), Quick: cfg.Quick}
	if cfg.TemporalDynamicConfig == nil {
		cfg.TemporalDynamicConfig = TunedTemporal
	}
	if cfg.APIServers <= 0 {
		cfg.APIServers = 10
		if cfg.Quick {
			cfg.APIServers = 3
		}
	}
	if cfg.APIServers < 3 {
		return rep, fmt.Errorf("at least 3 API servers are needed (the fleet-shape experiments use three)")
	}
	order, err := selectExperiments(cfg.Experiments, cfg.Quick)
	if err != nil {
		return rep, err
	}
	if cfg.WorkDir, err = filepath.Abs(cfg.WorkDir); err != nil {
		return rep, err
	}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
		}
	}
	e, err := startEnv(ctx, cfg, logf)
	if err != nil {
		return rep, err
	}
	defer e.stop()
	for _, name := range order {
		logf("experiment %s", name)
		start := time.Now()
		results, err := e.experiment(ctx, name)
		for i := range results {
			results[i].Quick = cfg.Quick
			judge(&results[i])
		}
		rep.Results = append(rep.Results, results...)
		if err != nil {
			logf("experiment %s failed: %v", name, err)
			rep.Results = append(rep.Results, Result{Experiment: name, Quick: cfg.Quick, Failed: true, Notes: "FAILED: " + truncate(err.Error(), 400)})
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			continue
		}
		e.results[name] = results
		logf("experiment %s done in %s", name, time.Since(start).Round(time.Second))
	}
	return rep, nil
}

// selectExperiments returns the experiments a run performs, in the order it performs them: those named,
// or every experiment but the scale ones, which take an hour (a quick run takes them too, at a small size,
// so that their harness keeps working).
func selectExperiments(names []string, quick bool) ([]string, error) {
	all := slices.Concat(Experiments, ScaleExperiments)
	selected := map[string]bool{}
	for _, x := range names {
		if !slices.Contains(all, x) {
			return nil, fmt.Errorf("unknown experiment %q (known: %s)", x, strings.Join(all, ", "))
		}
		selected[x] = true
	}
	if len(selected) == 0 {
		for _, x := range Experiments {
			selected[x] = true
		}
		for _, x := range ScaleExperiments {
			selected[x] = quick
		}
	}
	var order []string
	for _, x := range all {
		if selected[x] {
			order = append(order, x)
		}
	}
	return order, nil
}

// abba is the order of an experiment's rollouts on two sides: a, b, b, a, so that on a shared machine
// whose load drifts both sides get the same mean position against it. A quick run, which only keeps the
// harness working, rolls out once a side.
func (e *env) abba(a, b string) []string {
	if e.cfg.Quick {
		return []string{a, b}
	}
	return []string{a, b, b, a}
}

// scale returns the full-size value, or the quick one in a quick run.
func (e *env) scale(full, quick int) int {
	if e.cfg.Quick {
		return quick
	}
	return full
}

func (e *env) experiment(ctx context.Context, name string) ([]Result, error) {
	one := func(r Result, err error) ([]Result, error) {
		if err != nil {
			return nil, err
		}
		return []Result{r}, nil
	}
	deployed := func(dc deployCase) ([]Result, error) {
		dc.experiment, dc.direct = name, true
		res, _, err := e.deploy(ctx, dc)
		if err != nil {
			return nil, err
		}
		e.againstFloor(ctx, &res)
		return []Result{res}, nil
	}
	switch name {
	case "fleet-shape-1x10x3":
		return deployed(deployCase{tag: "fs1x10", clusters: 3, bundles: 1, cms: 10})
	case "fleet-shape-50x3":
		return deployed(deployCase{tag: "fs50", clusters: 3, bundles: e.scale(50, 10), cms: 1})
	case "gitrepo-50-bundles":
		return one(e.gitRepo50Bundles(ctx))
	case "deploy-1x10":
		var out []Result
		for _, n := range []int{10, e.scale(100, 30)} {
			dc := deployCase{experiment: name, tag: fmt.Sprintf("d1x10n%d", n), clusters: n, bundles: 1, cms: 10, direct: true}
			res, _, err := e.deploy(ctx, dc)
			if err != nil {
				return out, err
			}
			e.againstFloor(ctx, &res)
			out = append(out, res)
		}
		return out, nil
	case "deploy-50x50":
		n := e.scale(50, 10)
		return deployed(deployCase{tag: "d50x50", clusters: n, bundles: n, cms: 1, simulate: true})
	case experimentTwoWorkers:
		return e.twoWorkers(ctx, name)
	case "recovery":
		n := e.scale(50, 10)
		res, _, err := e.deploy(ctx, deployCase{experiment: name, tag: "recovery", clusters: n, bundles: n, cms: 1, simulate: true,
			killWorkerAfterFraction: recoveryKillFraction})
		return one(res, err)
	case "fanout-1000":
		n := e.scale(1000, 50)
		return deployed(deployCase{tag: "fan", clusters: n, bundles: 1, cms: 10, simulate: true, timeout: 15 * time.Minute})
	case "orchestration-floor":
		var out []Result
		for _, n := range []int{e.scale(100, 30), e.scale(1000, 50)} {
			res, err := e.floorAt(ctx, n)
			if err != nil {
				return out, err
			}
			out = append(out, res)
		}
		return out, nil
	case "remote-chart-100":
		return e.remoteChart(ctx, name, e.scale(100, 5))
	case "agents-50x3":
		return e.agentsExperiment(ctx, name, e.scale(3, 2), e.scale(50, 5), e.scale(10, 2))
	case experimentFanout10000:
		return one(e.fanoutScale(ctx, name))
	case "idle-check":
		var out []Result
		shapes := []struct {
			n         int
			interval  time.Duration
			intervals int
		}{{100, 15 * time.Second, 3}, {1000, time.Minute, 3}}
		if e.cfg.Quick {
			shapes = shapes[:1]
			shapes[0] = struct {
				n         int
				interval  time.Duration
				intervals int
			}{10, 2 * time.Second, 2}
		}
		for _, s := range shapes {
			res, err := e.idleCheck(ctx, s.n, s.interval, s.intervals)
			if err != nil {
				return out, err
			}
			out = append(out, res)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown experiment %q", name)
}

// judge prints each target beside its row and says whether it was met; quick rows of a smaller shape
// than the target's are not judged.
func judge(r *Result) {
	set := func(target string, met bool) { r.Target, r.TargetMet = target, ptr(met) }
	// Every deployment shape is also held to its own direct baseline; a row whose baseline could not be
	// measured has not shown it holds.
	againstDirect := func(target string, met bool) {
		bound := fmt.Sprintf("ratio ≤ %.2f", targetDirectRatio)
		if target != "" {
			bound = target + "; " + bound
		}
		set(bound, met && r.Ratio != nil && *r.Ratio <= targetDirectRatio)
	}
	switch {
	case r.Experiment == "fleet-shape-1x10x3":
		againstDirect(fmt.Sprintf("≤ %.1f s", targetFleetShape1x10x3), r.FlotillaSeconds <= targetFleetShape1x10x3)
	case r.Experiment == "fleet-shape-50x3" && r.Bundles == 50:
		againstDirect(fmt.Sprintf("≤ %.0f s", targetFleetShape50x3), r.FlotillaSeconds <= targetFleetShape50x3)
	case r.Experiment == "deploy-1x10" && (r.Clusters == 10 || r.Clusters == 100):
		againstDirect("", true)
	case r.Experiment == "deploy-50x50" && r.Clusters == 50:
		againstDirect(fmt.Sprintf("≤ %.0f s", targetDeploy50x50), r.FlotillaSeconds <= targetDeploy50x50)
	case r.Experiment == experimentTwoWorkers && r.Clusters == 50 && r.Ratio != nil:
		set(fmt.Sprintf("2 workers / 1 ≤ %.2f", targetTwoWorkersRatio), *r.Ratio <= targetTwoWorkersRatio)
	case r.Experiment == "fanout-1000" && r.Clusters == 1000:
		set(fmt.Sprintf("≤ %.0f s above max(direct, floor)", targetFanout1000Overhead),
			r.OverheadSeconds != nil && *r.OverheadSeconds <= targetFanout1000Overhead)
	case r.Experiment == experimentFanout10000 && r.Clusters >= 10000 && r.LargestPayloadBytes != nil:
		// The goals: a worker's memory per cluster, a status that answers at once, and at least twice
		// the margin on every Temporal limit.
		met := *r.WorkerRSSMBPerCluster <= targetWorkerMBPerCluster && *r.StatusSeconds < targetStatusSeconds &&
			*r.LargestPayloadBytes <= temporalPayloadLimitBytes/2 && *r.LargestHistoryEvents <= temporalHistoryEventLimit/2 &&
			*r.LargestHistoryBytes <= temporalHistoryBytesLimit/2
		set(fmt.Sprintf("≤ %.0f MB/cluster; status < %.0f s; half of every Temporal limit", targetWorkerMBPerCluster, targetStatusSeconds), met)
	case r.Experiment == "recovery" && r.DuplicatedRevisions != nil:
		set("0 duplicated revisions", *r.DuplicatedRevisions == 0)
	case r.Experiment == "remote-chart-100" && r.Clusters == 100 && r.ChartSource == chartSourceHelmRepo && r.Ratio != nil &&
		r.ChartArchiveGets != nil:
		met := *r.Ratio <= targetRemoteChartRatio && *r.ChartArchiveGets <= chartVersionsDeployed*max(r.Rollouts, 1)
		set(fmt.Sprintf("ratio ≤ %.2f; 1 archive GET per version per worker", targetRemoteChartRatio), met)
	case r.Experiment == "agents-50x3" && r.Clusters == 3 && r.Bundles == 50 && r.ClusterAccess == accessAgent && r.Ratio != nil:
		set(fmt.Sprintf("agent / kubeconfig ≤ %.2f", targetAgentRatio), *r.Ratio <= targetAgentRatio)
	case r.Experiment == "idle-check" && r.Clusters >= 100 && r.TemporalActionsPerClusterInterval != nil:
		// Per-cluster memory is the worker's whole RSS over the clusters: meaningless for a handful.
		met := *r.TemporalActionsPerClusterInterval <= targetIdleActions && *r.APIRequestsPerClusterInterval <= targetIdleAPIRequests &&
			*r.WorkerRSSMBPerCluster <= targetWorkerMBPerCluster
		set(fmt.Sprintf("≤ %.0f actions, ≤ %.0f API req /cluster/interval; ≤ %.0f MB/cluster", targetIdleActions, targetIdleAPIRequests, targetWorkerMBPerCluster), met)
	}
}

// machine describes where the benchmark ran.
func machine() string {
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(data), "\n", 2)[0], "MemTotal:"), "%f", &kb)
		mem = fmt.Sprintf(", %.0f GiB", kb/1024/1024)
	}
	return fmt.Sprintf("%d cores (%s)%s, %s/%s", runtime.NumCPU(), cpu, mem, runtime.GOOS, runtime.GOARCH)
}

// Failed lists the experiments that could not be measured: a broken harness, not a slow result.
func (rep Report) Failed() []string {
	var out []string
	for _, r := range rep.Results {
		if r.Failed {
			out = append(out, r.Experiment)
		}
	}
	return out
}

// WriteReport writes the JSON report to path.
func WriteReport(path string, rep Report) error { return writeJSON(path, rep) }
