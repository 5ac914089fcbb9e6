package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.uber.org/zap"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/visibility"
)

// StateUnknown is the state of a cluster workflow that has not reported one yet.
const StateUnknown = "Unknown"

// ClusterRefresh is how often flotilla_clusters is recounted.
const ClusterRefresh = 10 * time.Second

// clusterCount is flotilla_clusters: how many clusters of each GitRepo are in each state.
//
// It is counted from Temporal's visibility, where every cluster workflow keeps its state in the
// FlotillaState search attribute, and not from workflow code through the SDK's replay-safe metrics
// handler: that handler's gauges live in whichever worker last ran a workflow task, go silent on replay
// and are never taken back when a workflow moves to another worker or ends, so the counts would drift;
// and a count over workflows is not a per-workflow metric at all. Visibility is the one place that holds
// every cluster's state, so every worker reports the same counts (aggregate with max, not sum).
type clusterCount struct {
	desc *prometheus.Desc

	mu     sync.Mutex
	counts map[clusterKey]int
}

type clusterKey struct{ gitRepo, namespace, state string }

func newClusterCount() *clusterCount {
	return &clusterCount{desc: prometheus.NewDesc(Clusters,
		"Clusters each GitRepo deploys to, by the state of their cluster workflow (Fleet's states; Unknown before the first report). Every worker reports the same counts.",
		[]string{"gitrepo", "namespace", "state"}, nil)}
}

func (c *clusterCount) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *clusterCount) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k.gitRepo, k.namespace, k.state)
	}
}

// count reads every running cluster workflow of the installation on taskQueue.
func (c *clusterCount) count(ctx context.Context, l visibility.Lister, taskQueue string) error {
	q := "WorkflowType = '" + api.ClusterWorkflowType + "' AND ExecutionStatus = 'Running' AND TaskQueue = '" + taskQueue + "'"
	counts := map[clusterKey]int{}
	err := visibility.Each(ctx, l, q, 1000, func(e *workflowpb.WorkflowExecutionInfo) error {
		// The ID, not FlotillaNamespace, names the GitRepo: runs from before workspaces lack the attribute.
		owner, _, ok := api.ParseClusterWorkflowID(e.GetExecution().GetWorkflowId())
		if !ok {
			return nil
		}
		st := visibility.Keyword(e, api.SearchAttrState)
		if st == "" {
			st = StateUnknown
		}
		counts[clusterKey{owner.Name, owner.Namespace, st}]++
		return nil
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.counts = counts
	c.mu.Unlock()
	return nil
}

// CountClusters keeps flotilla_clusters current, recounting every ClusterRefresh until ctx ends. A failed
// count keeps the last one: a visibility hiccup should not empty a dashboard.
func (r *Registry) CountClusters(ctx context.Context, l visibility.Lister, taskQueue string, log *zap.Logger) {
	for {
		cctx, cancel := context.WithTimeout(ctx, ClusterRefresh)
		err := r.clusters.count(cctx, l, taskQueue)
		cancel()
		if err != nil && ctx.Err() == nil {
			log.Warn("counting clusters by state for flotilla_clusters", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(ClusterRefresh):
		}
	}
}
