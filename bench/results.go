package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one row of the benchmark's output. JSON names are a contract: keep them stable.
type Result struct {
	Experiment          string `json:"experiment"`
	Clusters            int    `json:"clusters"`
	Bundles             int    `json:"bundles"`
	ResourcesPerCluster int    `json:"resources_per_cluster"`
	// FlotillaSeconds is from the GitRepo's creation to its status reporting every desired cluster Ready
	// (gitrepo-50-bundles: to every bundle rendered for the cluster; idle-check: the idle window).
	FlotillaSeconds float64 `json:"flotilla_seconds"`
	// DirectSeconds is the same deployment by a plain loop over the Helm SDK, same concurrency, no Temporal.
	DirectSeconds *float64 `json:"direct_seconds,omitempty"`
	Ratio         *float64 `json:"ratio,omitempty"`
	// WorkerPeakRSSMB is the worker's VmHWM at the end of the experiment.
	WorkerPeakRSSMB float64 `json:"worker_peak_rss_mb"`
	// TemporalActions approximates Temporal Cloud's billable actions (the dev server's `action` counter,
	// less this benchmark's own status queries) during the measured phase.
	TemporalActions int64 `json:"temporal_actions"`
	// APIRequests is the kube-apiservers' apiserver_request_total over the measured phase, all clusters.
	APIRequests int64 `json:"api_requests"`

	TemporalActionsPerClusterInterval *float64 `json:"temporal_actions_per_cluster_interval,omitempty"`
	APIRequestsPerClusterInterval     *float64 `json:"api_requests_per_cluster_interval,omitempty"`
	CPUSecondsPerClusterInterval      *float64 `json:"cpu_seconds_per_cluster_interval,omitempty"`
	CheckIntervalSeconds              float64  `json:"check_interval_seconds,omitempty"`
	// Intervals is how many check intervals the idle window lasted (agents-50x3: all its windows together).
	Intervals             float64  `json:"intervals,omitempty"`
	WorkerRSSMBPerCluster *float64 `json:"worker_rss_mb_per_cluster,omitempty"`

	// CPU seconds used during the measured phase, by process.
	WorkerCPUSeconds    float64 `json:"worker_cpu_seconds"`
	TemporalCPUSeconds  float64 `json:"temporal_cpu_seconds"`
	APIServerCPUSeconds float64 `json:"apiserver_cpu_seconds"`
	EtcdCPUSeconds      float64 `json:"etcd_cpu_seconds"`
	// DirectCPUSeconds is the baseline's own process plus the API servers and etcd during its phase.
	DirectCPUSeconds *float64 `json:"direct_cpu_seconds,omitempty"`
	// DirectProcessCPUSeconds is the baseline's own process alone (what the worker's CPU compares with).
	DirectProcessCPUSeconds *float64 `json:"direct_process_cpu_seconds,omitempty"`
	DirectAPIRequests       *int64   `json:"direct_api_requests,omitempty"`

	// RealAPIServers is how many kube-apiservers served the clusters; SimulatedClusters says whether
	// clusters were simulated (several per API server, each confined to its own namespace).
	RealAPIServers    int  `json:"real_apiservers"`
	SimulatedClusters bool `json:"simulated_clusters"`

	GitRepoHistoryEvents int64 `json:"gitrepo_history_events,omitempty"`
	GitRepoRuns          int   `json:"gitrepo_runs,omitempty"`
	// DuplicatedRevisions counts releases holding more Helm revisions than commits deployed (recovery).
	DuplicatedRevisions *int     `json:"duplicated_revisions,omitempty"`
	KilledAtSeconds     *float64 `json:"killed_at_seconds,omitempty"`
	// DiscoveredSeconds is when the GitRepo's Plan activity completed, from the workflow's start: discovery,
	// and for remote charts their resolution and the archive's fetch.
	DiscoveredSeconds *float64 `json:"discovered_seconds,omitempty"`
	// FloorSeconds is the orchestration-floor row's time: Flotilla's workflow shape with empty activities
	// (no Kubernetes, no Helm) from the parent's start to every child's report. A deployment row with a
	// direct baseline carries the floor at its own number of clusters from the same run, and
	// OverheadSeconds, what Flotilla took above max(direct, floor): the part of a deployment that is
	// Flotilla's own.
	FloorSeconds    *float64 `json:"floor_seconds,omitempty"`
	OverheadSeconds *float64 `json:"overhead_seconds,omitempty"`
	// FloorCPUSeconds is that floor's CPU, its worker's and Temporal's.
	FloorCPUSeconds *float64 `json:"floor_cpu_seconds,omitempty"`

	// ChartSource is where a remote-chart-100 row's chart came from: "git" (vendored in the repository) or
	// "helm-repo" (the benchmark's Helm repository, over HTTPS with basic auth).
	ChartSource string `json:"chart_source,omitempty"`
	// GitChartSeconds is, on a helm-repo row, the git row's flotilla_seconds from the same run; that row's
	// ratio is flotilla_seconds over it.
	GitChartSeconds *float64 `json:"git_chart_seconds,omitempty"`
	// ChartArchiveGets and ChartIndexGets are the GETs of the chart's archive and of index.yaml the Helm
	// repository served during a helm-repo row's rollouts, summed: one chart version, one worker each.
	ChartArchiveGets *int `json:"chart_archive_gets,omitempty"`
	ChartIndexGets   *int `json:"chart_index_gets,omitempty"`
	// Rollouts is how many rollouts a row's figures are the mean of (remote-chart-100), each with a
	// Temporal dev server and a worker of its own.
	Rollouts int `json:"rollouts,omitempty"`

	// ClusterAccess is how an agents-50x3 row's clusters were reached: "kubeconfig" (the worker holds their
	// kubeconfigs) or "agent" (pull mode: a flotilla-agent per cluster). Its flotilla_seconds is the rollout
	// time, the mean of its rollouts; the *_per_cluster_interval fields are the idle windows after them.
	ClusterAccess string `json:"cluster_access,omitempty"`
	// KubeconfigSeconds is, on an agent row, the kubeconfig row's flotilla_seconds from the same run; that
	// row's ratio is flotilla_seconds over it.
	KubeconfigSeconds *float64 `json:"kubeconfig_seconds,omitempty"`
	// AgentCPUSeconds is every flotilla-agent's CPU during the measured rollout (the mean over rollouts), and
	// AgentPeakRSSMB the highest agent's VmHWM.
	AgentCPUSeconds *float64 `json:"agent_cpu_seconds,omitempty"`
	AgentPeakRSSMB  *float64 `json:"agent_peak_rss_mb,omitempty"`
	// ContentWorkflows is how many ContentWorkflows (package chunk fetches by the agents) a rollout started,
	// its mean; IdleContentWorkflows how many started in all the idle windows together (0 expected).
	ContentWorkflows     *int64 `json:"content_workflows,omitempty"`
	IdleContentWorkflows *int64 `json:"idle_content_workflows,omitempty"`

	// Workers is how many flotilla-worker processes shared the task queue, on a row that ran more than one
	// (deploy-50x50-2workers); OneWorkerSeconds is then the one-worker time of the same shape in the same
	// run, which the row's ratio divides by.
	Workers          int      `json:"workers,omitempty"`
	OneWorkerSeconds *float64 `json:"one_worker_seconds,omitempty"`
	// WorkerActivities and WorkerWorkflowTasks are the activities (local ones included) and workflow tasks
	// each worker completed, over every workflow of the run, read from the histories' identities.
	WorkerActivities    []int64 `json:"worker_activities,omitempty"`
	WorkerWorkflowTasks []int64 `json:"worker_workflow_tasks,omitempty"`

	// A fanout-10000 row (make bench-scale): RolloutSeconds is from the sync signal of a second commit to
	// every cluster Ready at it, TemporalActionsPerClusterRollout the actions of that rollout per cluster;
	// StatusSeconds is how long `flotilla status` took to answer once all were Ready, StatusBytes what it
	// printed. LargestHistoryEvents and LargestHistoryBytes are the longest history of any workflow of the
	// run (each run of a workflow counted alone); LargestPayloadBytes is the largest of the GitRepo's
	// history events (a payload and its envelope), its status answer and its memo, LargestPayload which.
	RolloutSeconds                   *float64 `json:"rollout_seconds,omitempty"`
	TemporalActionsPerClusterRollout *float64 `json:"temporal_actions_per_cluster_rollout,omitempty"`
	StatusSeconds                    *float64 `json:"status_seconds,omitempty"`
	StatusBytes                      *int     `json:"status_bytes,omitempty"`
	LargestHistoryEvents             *int64   `json:"largest_history_events,omitempty"`
	LargestHistoryBytes              *int64   `json:"largest_history_bytes,omitempty"`
	LargestPayloadBytes              *int64   `json:"largest_payload_bytes,omitempty"`
	LargestPayload                   string   `json:"largest_payload,omitempty"`

	Target    string `json:"target,omitempty"`
	TargetMet *bool  `json:"target_met,omitempty"`
	Quick     bool   `json:"quick,omitempty"`
	// Failed marks an experiment that could not be measured; Notes says why.
	Failed bool   `json:"failed,omitempty"`
	Notes  string `json:"notes,omitempty"`
}

// Report is what $BENCH_OUT holds.
type Report struct {
	Date    time.Time `json:"date"`
	Machine string    `json:"machine"`
	Quick   bool      `json:"quick"`
	Results []Result  `json:"results"`
}

func ptr[T any](v T) *T { return &v }

func round(v float64, digits int) float64 {
	p := 1.0
	for i := 0; i < digits; i++ {
		p *= 10
	}
	if v < 0 {
		return -float64(int64(-v*p+0.5)) / p
	}
	return float64(int64(v*p+0.5)) / p
}

func fmtFloat(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

func deref64(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}

func fmtInt(v *int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

// writeJSON writes the report, creating the folder.
func writeJSON(path string, rep Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// PrintTable prints the results with their targets.
func PrintTable(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "experiment\tclusters\tbundles\tres/cluster\tflotilla s\tdirect s\tratio\tworker MB\tactions\tAPI req\ttarget\tmet\tnotes")
	for _, r := range results {
		direct, ratio := "-", "-"
		if r.DirectSeconds != nil {
			direct = fmt.Sprintf("%.2f", *r.DirectSeconds)
		}
		if r.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *r.Ratio)
		}
		met := "-"
		if r.TargetMet != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*r.TargetMet]
		}
		clusters := fmt.Sprint(r.Clusters)
		if r.SimulatedClusters {
			clusters += fmt.Sprintf(" (sim/%d)", r.RealAPIServers)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%s\t%s\t%.0f\t%d\t%d\t%s\t%s\t%s\n", r.Experiment, clusters, r.Bundles,
			r.ResourcesPerCluster, r.FlotillaSeconds, direct, ratio, r.WorkerPeakRSSMB, r.TemporalActions, r.APIRequests,
			r.Target, met, details(r))
	}
	_ = tw.Flush()
}

// details is the short, row-specific part of the table.
func details(r Result) string {
	var parts []string
	if r.TemporalActionsPerClusterInterval != nil {
		parts = append(parts, fmt.Sprintf("per cluster·interval: %.2f actions, %.2f API req, %.4f CPU s",
			*r.TemporalActionsPerClusterInterval, *r.APIRequestsPerClusterInterval, *r.CPUSecondsPerClusterInterval))
	}
	if r.WorkerRSSMBPerCluster != nil {
		parts = append(parts, fmt.Sprintf("%.2f MB/cluster", *r.WorkerRSSMBPerCluster))
	}
	if r.GitRepoHistoryEvents > 0 {
		parts = append(parts, fmt.Sprintf("GitRepo history %d events in %d runs", r.GitRepoHistoryEvents, r.GitRepoRuns))
	}
	if r.DuplicatedRevisions != nil {
		parts = append(parts, fmt.Sprintf("killed at %.1fs, %d duplicated revisions", *r.KilledAtSeconds, *r.DuplicatedRevisions))
	}
	switch {
	case r.ChartSource == "git":
		parts = append(parts, "chart vendored in git")
	case r.ChartSource != "":
		parts = append(parts, fmt.Sprintf("chart from a Helm repository: %s archive GETs, %s index.yaml GETs by %d workers; vendored %s",
			fmtInt(r.ChartArchiveGets), fmtInt(r.ChartIndexGets), r.Rollouts, fmtPtr(r.GitChartSeconds)))
	}
	switch r.ClusterAccess {
	case accessKubeconfig:
		parts = append(parts, fmt.Sprintf("through kubeconfigs, mean of %d rollouts", r.Rollouts))
	case accessAgent:
		parts = append(parts, fmt.Sprintf("pull mode, a flotilla-agent per cluster, mean of %d rollouts; kubeconfig side %s; agents' CPU %s s, peak RSS %s MB; %d package fetches per rollout, %d while idle",
			r.Rollouts, fmtPtr(r.KubeconfigSeconds), fmtFloat(r.AgentCPUSeconds), fmtFloat(r.AgentPeakRSSMB), deref64(r.ContentWorkflows), deref64(r.IdleContentWorkflows)))
	}
	if r.CheckIntervalSeconds > 0 && r.ClusterAccess != "" {
		parts = append(parts, fmt.Sprintf("idle: %d windows, %.1f check intervals of %.0fs in all", r.Rollouts, r.Intervals, r.CheckIntervalSeconds))
	}
	if r.Workers > 1 {
		parts = append(parts, fmt.Sprintf("%d workers on one task queue, 1 worker %s; activities per worker %s, workflow tasks %s",
			r.Workers, fmtPtr(r.OneWorkerSeconds), joinCounts(r.WorkerActivities), joinCounts(r.WorkerWorkflowTasks)))
	}
	if r.RolloutSeconds != nil {
		parts = append(parts, fmt.Sprintf("rollout %.2fs, %.2f actions/cluster", *r.RolloutSeconds, *r.TemporalActionsPerClusterRollout))
	}
	if r.StatusSeconds != nil {
		parts = append(parts, fmt.Sprintf("flotilla status %.2fs (%d bytes)", *r.StatusSeconds, *r.StatusBytes))
	}
	if r.LargestHistoryEvents != nil {
		parts = append(parts, fmt.Sprintf("longest history %d events / %.1f MB (limits %d / %d MB)", *r.LargestHistoryEvents,
			float64(*r.LargestHistoryBytes)/(1<<20), temporalHistoryEventLimit, temporalHistoryBytesLimit>>20))
	}
	if r.LargestPayloadBytes != nil {
		parts = append(parts, fmt.Sprintf("largest payload %.0f KB, %s (limit %d KB)", float64(*r.LargestPayloadBytes)/1024, r.LargestPayload,
			temporalPayloadLimitBytes>>10))
	}
	if r.FloorSeconds != nil {
		parts = append(parts, fmt.Sprintf("empty workflow shape done in %.2fs", *r.FloorSeconds))
	}
	if r.OverheadSeconds != nil {
		parts = append(parts, fmt.Sprintf("%.1fs above max(direct, floor)", *r.OverheadSeconds))
	}
	if r.DiscoveredSeconds != nil && r.ChartSource != "" {
		parts = append(parts, fmt.Sprintf("planned in %.2fs", *r.DiscoveredSeconds))
	} else if r.DiscoveredSeconds != nil {
		parts = append(parts, fmt.Sprintf("discovered in %.2fs", *r.DiscoveredSeconds))
	}
	parts = append(parts, fmt.Sprintf("CPU s worker %.1f temporal %.1f apiservers %.1f", r.WorkerCPUSeconds, r.TemporalCPUSeconds, r.APIServerCPUSeconds))
	if r.Notes != "" {
		parts = append(parts, r.Notes)
	}
	return strings.Join(parts, "; ")
}
