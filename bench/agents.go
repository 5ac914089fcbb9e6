package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
)

// agents-50x3: the same repository deployed, in the same run, to clusters the worker reaches through
// kubeconfigs and to clusters in pull mode (ADR 22), where the worker only renders (Prepare) and each
// cluster's own flotilla-agent observes, fetches the packages through ContentWorkflows and applies. The
// ratio of the two rollout times is what pull mode costs a deployment; the idle window after each rollout
// is what it costs a cluster at rest, per check.

const (
	accessKubeconfig = "kubeconfig"
	accessAgent      = "agent"
	targetAgentRatio = 1.3
	// agentCheckInterval is both sides' check interval: short, so that an idle window of a few seconds
	// holds enough checks to count; the rollouts use it too, so both sides deploy under the same one.
	agentCheckInterval = 2 * time.Second
)

// agentsExperiment rolls out bundles to n simulated clusters through kubeconfigs and through agents, twice
// each (once in a quick run), and returns a row per side.
func (e *env) agentsExperiment(ctx context.Context, name string, n, bundles, intervals int) ([]Result, error) {
	rollout := func(access, tag string, b, idleIntervals int) (Result, error) {
		res, r, err := e.deploy(ctx, deployCase{experiment: name, tag: tag, clusters: n, bundles: b, cms: 1, simulate: true,
			agents: access == accessAgent, checkInterval: agentCheckInterval, keep: true})
		if err != nil {
			return res, err
		}
		defer r.stop()
		res.ClusterAccess = access
		// A rollout that met its goal outside its clusters' namespaces measured the wrong thing.
		if err := r.confinedReleases(ctx, b); err != nil {
			return res, err
		}
		fetches, err := r.countWorkflows(ctx, "WorkflowType = '"+api.ContentWorkflowType+"'")
		if err != nil {
			return res, err
		}
		res.ContentWorkflows = ptr(fetches)
		switch {
		case access == accessAgent && fetches == 0:
			return res, fmt.Errorf("%s: no ContentWorkflow ran: the agents did not fetch the packages they applied", tag)
		case access == accessKubeconfig && fetches > 0:
			return res, fmt.Errorf("%s: %d ContentWorkflows ran for clusters reached through kubeconfigs", tag, fetches)
		}
		if idleIntervals > 0 {
			return res, r.idleWindow(ctx, &res, n, agentCheckInterval, idleIntervals)
		}
		return res, nil
	}

	// Unmeasured, it takes the cold start (page cache, fresh API servers) off the first measured rollout.
	if _, err := rollout(accessAgent, "agwarm", min(bundles, 10), 0); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	// In abba's order, as remote-chart-100 does.
	tags := map[string]string{accessKubeconfig: "agkube", accessAgent: "agpull"}
	rollouts := map[string][]Result{}
	for i, access := range e.abba(accessKubeconfig, accessAgent) {
		res, err := rollout(access, fmt.Sprintf("%s%d", tags[access], i), bundles, intervals)
		if err != nil {
			return nil, err
		}
		rollouts[access] = append(rollouts[access], res)
	}
	kube, agent := meanAccessRollouts(rollouts[accessKubeconfig]), meanAccessRollouts(rollouts[accessAgent])
	agent.KubeconfigSeconds = ptr(kube.FlotillaSeconds)
	agent.Ratio = ptr(round(agent.FlotillaSeconds/kube.FlotillaSeconds, 2))
	e.logf("  %s: agents Ready in %.2fs against %.2fs through kubeconfigs (ratio %.2f); idle per cluster·check: %.2f against %.2f actions, %.2f against %.2f API requests",
		name, agent.FlotillaSeconds, kube.FlotillaSeconds, *agent.Ratio, *agent.TemporalActionsPerClusterInterval, *kube.TemporalActionsPerClusterInterval,
		*agent.APIRequestsPerClusterInterval, *kube.APIRequestsPerClusterInterval)
	return []Result{kube, agent}, nil
}

// idleWindow measures a run at rest for a number of check intervals, as idle-check does, into res's
// per-cluster-interval fields; the agents' CPU is counted with the rest.
func (r *run) idleWindow(ctx context.Context, res *Result, n int, interval time.Duration, intervals int) error {
	// Let the last post-apply checks finish before the window opens.
	time.Sleep(2 * time.Second)
	fetches0, err := r.countWorkflows(ctx, "WorkflowType = '"+api.ContentWorkflowType+"'")
	if err != nil {
		return err
	}
	before, err := r.snapshot(ctx)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(intervals) * interval):
	}
	after, err := r.snapshot(ctx)
	if err != nil {
		return err
	}
	fetches, err := r.countWorkflows(ctx, "WorkflowType = '"+api.ContentWorkflowType+"'")
	if err != nil {
		return err
	}
	d := diff(before, after)
	ci := float64(n) * d.seconds / interval.Seconds()
	res.CheckIntervalSeconds = interval.Seconds()
	res.Intervals = round(d.seconds/interval.Seconds(), 2)
	res.TemporalActionsPerClusterInterval = ptr(round(d.actions/ci, 3))
	res.APIRequestsPerClusterInterval = ptr(round(d.apiRequests/ci, 3))
	res.CPUSecondsPerClusterInterval = ptr(round((d.worker+d.temporal+d.kube+d.etcd+d.agents)/ci, 5))
	res.IdleContentWorkflows = ptr(fetches - fetches0)
	return nil
}

// meanAccessRollouts folds one side's rollouts into its row: the means of remote-chart-100's fold, the
// agents' CPU and package fetches per rollout, and the idle figures averaged over the rollouts' windows.
func meanAccessRollouts(rs []Result) Result {
	out := meanRollouts(rs)
	out.DiscoveredSeconds, out.ChartArchiveGets, out.ChartIndexGets = nil, nil, nil
	mean := func(get func(Result) *float64, digits int) *float64 {
		var sum float64
		for _, r := range rs {
			v := get(r)
			if v == nil {
				return nil
			}
			sum += *v
		}
		return ptr(round(sum/float64(len(rs)), digits))
	}
	out.TemporalActionsPerClusterInterval = mean(func(r Result) *float64 { return r.TemporalActionsPerClusterInterval }, 3)
	out.APIRequestsPerClusterInterval = mean(func(r Result) *float64 { return r.APIRequestsPerClusterInterval }, 3)
	out.CPUSecondsPerClusterInterval = mean(func(r Result) *float64 { return r.CPUSecondsPerClusterInterval }, 5)
	out.AgentCPUSeconds = mean(func(r Result) *float64 { return r.AgentCPUSeconds }, 2)
	// The intervals of all windows together: what the per-interval means were measured over.
	out.Intervals = 0
	for _, r := range rs {
		out.Intervals += r.Intervals
		if r.AgentPeakRSSMB != nil {
			out.AgentPeakRSSMB = ptr(max(*r.AgentPeakRSSMB, deref(out.AgentPeakRSSMB)))
		}
	}
	out.Intervals = round(out.Intervals, 2)
	var fetches, idleFetches int64
	for _, r := range rs {
		if r.ContentWorkflows != nil {
			fetches += *r.ContentWorkflows
		}
		if r.IdleContentWorkflows != nil {
			idleFetches += *r.IdleContentWorkflows
		}
	}
	// Fetches per rollout read as "one per package"; idle fetches should be none at all, so their total.
	out.ContentWorkflows, out.IdleContentWorkflows = ptr(int64(float64(fetches)/float64(len(rs))+0.5)), ptr(idleFetches)
	return out
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// startAgents starts a flotilla-agent for each agent-mode cluster and waits until every one polls its
// queue, so that a rollout's time does not include an agent's start-up.
func (r *run) startAgents(ctx context.Context, clusters []benchCluster) error {
	for _, c := range clusters {
		if !c.Agent {
			continue
		}
		a, err := devenv.StartAgent(devenv.AgentOptions{Bin: r.e.cfg.BinDir, Address: r.temporal.Address(), Cluster: c.Name,
			Kubeconfig: c.Kubeconfig, TaskQueue: api.DefaultTaskQueue, CacheDir: filepath.Join(r.dir, "agents", c.Name),
			LogFile: r.agentLog(c.Name), Key: r.key.ForCluster("", c.Name)})
		if err != nil {
			return err
		}
		r.agents = append(r.agents, a)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for i, c := range agentClusters(clusters) {
		for !r.agentPolls(ctx, c.Name) {
			if !r.agents[i].Alive() {
				return fmt.Errorf("flotilla-agent of %s exited at start-up:\n%s", c.Name, proc.Tail(r.agentLog(c.Name), 20))
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the flotilla-agent of %s does not poll its task queue after 3 minutes", c.Name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func (r *run) agentLog(cluster string) string { return filepath.Join(r.dir, "agent-"+cluster+".log") }

func agentClusters(clusters []benchCluster) []benchCluster {
	var out []benchCluster
	for _, c := range clusters {
		if c.Agent {
			out = append(out, c)
		}
	}
	return out
}

// agentPolls reports whether a flotilla-agent polls the cluster's own activity queue.
func (r *run) agentPolls(ctx context.Context, cluster string) bool {
	resp, err := r.client.DescribeTaskQueue(ctx, api.AgentTaskQueue(api.DefaultTaskQueue, "", cluster), enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return false
	}
	for _, p := range resp.GetPollers() {
		if _, _, ok := api.ParseAgentIdentity(p.GetIdentity()); ok {
			return true
		}
	}
	return false
}

// countWorkflows counts the run's workflows matching a visibility query.
func (r *run) countWorkflows(ctx context.Context, query string) (int64, error) {
	resp, err := r.client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		return 0, err
	}
	return resp.GetCount(), nil
}

// confinedReleases checks that every simulated cluster of the run holds one release per bundle in its own
// namespace and that none went to the namespace an unconfined bundle would use: agent-mode clusters must
// honour spec.confineToNamespace as kubeconfig ones do, or they would share releases on one API server.
func (r *run) confinedReleases(ctx context.Context, bundles int) error {
	clients := map[int]metadata.Interface{}
	for _, c := range r.clusters {
		if c.Namespace == "" {
			continue
		}
		mc := clients[c.APIServer]
		if mc == nil {
			cfg, err := restConfig(r.e.k8s.Kubeconfig(r.e.apiservers[c.APIServer]))
			if err != nil {
				return err
			}
			if mc, err = metadata.NewForConfig(cfg); err != nil {
				return err
			}
			clients[c.APIServer] = mc
		}
		releases := func(ns string) (map[string]bool, error) {
			list, err := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns).
				List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
			if err != nil {
				return nil, err
			}
			out := map[string]bool{}
			for _, s := range list.Items {
				out[s.Labels["name"]] = true
			}
			return out, nil
		}
		own, err := releases(c.Namespace)
		if err != nil {
			return err
		}
		if len(own) != bundles {
			return fmt.Errorf("cluster %s: %d releases in its namespace %s, %d bundles deployed", c.Name, len(own), c.Namespace, bundles)
		}
		stray, err := releases(metav1.NamespaceDefault)
		if err != nil {
			return err
		}
		var names []string
		for name := range stray {
			if own[name] {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			return errors.New("releases " + strings.Join(names, ", ") + " in namespace default: a cluster's confineToNamespace was not honoured")
		}
	}
	return nil
}
