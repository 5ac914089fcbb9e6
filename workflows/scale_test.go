package workflows

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"go.temporal.io/sdk/log"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/activities"
	"github.com/flotilla-gitops/flotilla/api"
)

// scalePlan is a plan of n clusters, each targeted by every one of bundles bundles, with digests as the
// inventory makes them (sha256, which no compression shortens).
func scalePlan(n, bundles int) api.Plan {
	p := api.Plan{Commit: "c1", InventoryGeneration: 1, Clusters: make([]api.PlannedCluster, 0, n)}
	for b := 0; b < bundles; b++ {
		p.Bundles = append(p.Bundles, api.BundleRef{Name: fmt.Sprintf("fleet-apps-app-%d", b), Path: fmt.Sprintf("apps/app-%d", b)})
	}
	for c := 0; c < n; c++ {
		name := fmt.Sprintf("edge-%05d", c)
		pc := api.PlannedCluster{Name: name, Digest: fmt.Sprintf("%x", sha256.Sum256([]byte(name)))}
		for b := 0; b < bundles; b++ {
			pc.Bundles = append(pc.Bundles, b)
		}
		p.Clusters = append(p.Clusters, pc)
	}
	return p
}

// reportOf is what a cluster's workflow reports once its target is applied: every bundle Ready, or every
// bundle failing with a message of its own (a bad commit, the worst case for the GitRepo's state).
func reportOf(in api.ClusterWorkflowInput, failing bool) api.ClusterReport {
	st := api.ClusterStatus{Name: in.Target.Cluster, Commit: in.Target.Commit, Reachable: true, Generation: in.Generation,
		LastChecked: t0, LastSeen: t0}
	for _, b := range in.Target.Bundles {
		bs := api.BundleStatus{Name: b.Name, State: api.StateReady, Release: b.Name, Revision: 1,
			ResourceCounts: api.ResourceCounts{DesiredReady: 4, Ready: 4}}
		if failing {
			bs.State, bs.ResourceCounts.Ready = api.StateErrApplied, 0
			bs.Message = fmt.Sprintf(`cluster %q: bundle %q: %s/values.yaml: map has no entry for key "fqdn-%x"`,
				in.Target.Cluster, b.Name, b.Path, sha256.Sum256([]byte(in.Target.Cluster+b.Name)))
		}
		st.Bundles = append(st.Bundles, bs)
	}
	summarizeCluster(&st)
	return api.ClusterReport{Cluster: in.Target.Cluster, Status: st}
}

// testFleet is the clusters of a scale test: each cluster workflow applies what it is handed at once and
// reports, as ClusterWorkflow does (api.ClusterReport), with a signal to the GitRepo. A report sent while a run ends reaches the next run, as the server holds a signal that arrives
// while a run continues as new.
type testFleet struct {
	env     *testsuite.TestWorkflowEnvironment
	failing bool
	running map[string]bool
	// last is each cluster's last report; unread those the GitRepo has not taken yet.
	last   map[string]api.ClusterReport
	unread map[string]bool
	queue  []api.ClusterReport
}

func newTestFleet(failing bool) *testFleet {
	return &testFleet{failing: failing, running: map[string]bool{}, last: map[string]api.ClusterReport{}, unread: map[string]bool{}}
}

// send queues a report. The reports sent during one workflow task of the GitRepo reach it together, in
// one next task, as the server hands a workflow every signal that arrived while a task of it ran.
func (f *testFleet) send(rep api.ClusterReport) {
	f.last[rep.Cluster], f.unread[rep.Cluster] = rep, true
	f.queue = append(f.queue, rep)
	if len(f.queue) == 1 {
		f.env.RegisterDelayedCallback(f.flush, 0)
	}
}

func (f *testFleet) flush() {
	q := f.queue
	f.queue = nil
	for i, rep := range q {
		if i < len(q)-1 {
			f.env.SignalWorkflowSkippingWorkflowTask(api.SignalClusterReport, rep)
		} else {
			f.env.SignalWorkflow(api.SignalClusterReport, rep)
		}
	}
}

func (f *testFleet) started(in api.ClusterWorkflowInput) {
	f.running[in.Target.Cluster] = true
	f.send(reportOf(in, f.failing))
}

func (f *testFleet) signaled(workflowID, signal string, arg any) error {
	_, cluster, _ := api.ParseClusterWorkflowID(workflowID)
	if !f.running[cluster] {
		return serviceerror.NewNotFound("workflow not found")
	}
	switch signal {
	case api.SignalDesired:
		up := arg.(api.DesiredUpdate)
		f.send(reportOf(api.ClusterWorkflowInput{Target: up.Target, Generation: up.Generation}, f.failing))
	case api.SignalRemove:
		delete(f.running, cluster)
		f.send(api.ClusterReport{Cluster: cluster, Removed: true})
	}
	return nil
}

// allAt says every one of n clusters last reported commit.
func (f *testFleet) allAt(commit string, n int) bool {
	if len(f.last) < n {
		return false
	}
	for _, rep := range f.last {
		if rep.Removed || rep.Status.Commit != commit {
			return false
		}
	}
	return true
}

// taken records a report the GitRepo took.
func (f *testFleet) taken(signal string, arg *commonpb.Payloads) {
	var rep api.ClusterReport
	if signal == api.SignalClusterReport && converter.GetDefaultDataConverter().FromPayloads(arg, &rep) == nil {
		delete(f.unread, rep.Cluster)
	}
}

// scaleRuns runs a GitRepo, one test environment per run, until done says the status shows what the
// phase waits for (then the run is asked to continue as new) or the workflow ends; it returns the last
// input, the last status and whether the workflow ended.
func scaleRuns(t *testing.T, probe *limitsProbe, fleet *testFleet, in api.GitRepoInput, commit func() string, plan func() api.Plan,
	start func(*testsuite.TestWorkflowEnvironment), settled func() bool, done func(api.GitRepoStatus) bool) (api.GitRepoInput, api.GitRepoStatus, bool) {
	var last api.GitRepoStatus
	for runs := 0; ; runs++ {
		require.Less(t, runs, 100, "the GitRepo makes no progress")
		var suite testsuite.WorkflowTestSuite
		suite.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		env := suite.NewTestWorkflowEnvironment()
		env.SetTestTimeout(5 * time.Minute)
		env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute, Interceptors: []interceptor.WorkerInterceptor{probe.interceptor()}})
		var unmocked *activities.Activities
		unmocked.Register(env)
		env.OnActivity(api.ActivityPoll, mock.Anything, mock.Anything).Return(
			func(context.Context, api.PollInput) (api.PollResult, error) {
				return api.PollResult{Commit: commit(), InventoryGeneration: 1}, nil
			})
		env.OnActivity(api.ActivityPlan, mock.Anything, mock.Anything).Return(
			func(_ context.Context, pin api.PlanInput) (api.Plan, error) {
				p := plan()
				if pin.Pack {
					require.NoError(t, p.Pack())
				}
				return p, nil
			})
		env.OnActivity(api.ActivityListClusterWorkflows, mock.Anything, mock.Anything).Return(
			func(context.Context, api.ListClusterWorkflowsInput) (api.ListClusterWorkflowsResult, error) {
				return api.ListClusterWorkflowsResult{Clusters: sortedKeys(fleet.running)}, nil
			})
		probe.env, fleet.env = env, env
		fleet.queue = nil
		env.RegisterDelayedCallback(func() {
			for _, c := range sortedKeys(fleet.unread) {
				fleet.send(fleet.last[c])
			}
		}, time.Millisecond)
		if start != nil && runs == 0 {
			env.RegisterDelayedCallback(func() { start(env) }, time.Second)
		}
		ended := false
		for at := time.Minute; at <= 2*time.Hour; at += time.Minute {
			env.RegisterDelayedCallback(func() {
				if ended || len(fleet.unread) > 0 || !settled() {
					return // a status is read only once there is something to see: at 10,000 clusters it costs
				}
				v, err := env.QueryWorkflow(api.QueryStatus)
				require.NoError(t, err)
				require.NoError(t, v.Get(&last))
				probe.payload(last)
				ended = done(last)
				env.SetContinueAsNewSuggested(ended)
			}, at)
		}

		env.ExecuteWorkflow(GitRepoWorkflow, in)

		var can *workflow.ContinueAsNewError
		if err := env.GetWorkflowError(); !errors.As(err, &can) {
			require.NoError(t, err, "run %d", runs)
			return in, last, true
		}
		in = api.GitRepoInput{}
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &in))
		if ended {
			return in, last, false
		}
	}
}

// A GitRepo of thousands of clusters of ten bundles deploys to every one of them, rolls a new commit out
// to all, and is deleted from all, through as many runs as it takes, and no run comes near a Temporal
// limit: every payload it hands over (continue-as-new input, plan, signals, memo, status answer), its
// history and what it has pending stay under half of Temporal's limit; healthy, and when every bundle on
// every cluster fails with a message of its own. The suite drives 2,000 clusters;
// FLOTILLA_SCALE_CLUSTERS=10000 drives the fleet size the scale issue asks for (ADR 34 says how it fares).
func TestAGitRepoOfThousandsOfClustersStaysUnderHalfOfEveryTemporalLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("drives thousands of clusters")
	}
	clusters, bundles := 2000, 10
	if n, err := strconv.Atoi(os.Getenv("FLOTILLA_SCALE_CLUSTERS")); err == nil {
		clusters = n
	}
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing=%v", failing), func(t *testing.T) {
			probe, fleet := newLimitsProbe(nil), newTestFleet(failing)
			probe.fleet, probe.received = fleet, fleet.taken
			commit := "c1"
			plan := func() api.Plan { p := scalePlan(clusters, bundles); p.Commit = commit; return p }
			deployedAt := func(c string) func(api.GitRepoStatus) bool {
				return func(st api.GitRepoStatus) bool {
					if st.Commit != c || st.DesiredReadyClusters != clusters {
						return false
					}
					if failing {
						return st.Summary.ErrApplied == clusters*bundles
					}
					return st.ReadyClusters == clusters
				}
			}

			reportedAt := func(c string) func() bool { return func() bool { return fleet.allAt(c, clusters) } }
			in, st, _ := scaleRuns(t, probe, fleet, shopInput(0), func() string { return commit }, plan, nil, reportedAt("c1"), deployedAt("c1"))
			require.Len(t, fleet.running, clusters, "every cluster runs the GitRepo")
			t.Logf("deployed: %s; %d/%d ready, %d bundles failing", probe, st.ReadyClusters, st.DesiredReadyClusters, st.Summary.ErrApplied)

			commit = "c2"
			in, st, _ = scaleRuns(t, probe, fleet, in, func() string { return commit }, plan,
				func(env *testsuite.TestWorkflowEnvironment) { env.SignalWorkflow(api.SignalSync, api.SyncRequest{}) }, reportedAt("c2"), deployedAt("c2"))
			t.Logf("rolled out: %s", probe)

			_, _, ended := scaleRuns(t, probe, fleet, in, func() string { return commit }, plan,
				func(env *testsuite.TestWorkflowEnvironment) { env.SignalWorkflow(api.SignalDelete, nil) },
				func() bool { return false }, func(api.GitRepoStatus) bool { return false })
			require.True(t, ended, "the deleted GitRepo ends")
			require.Empty(t, fleet.running, "and is removed from every cluster")
			t.Logf("deleted: %s", probe)

			require.Less(t, probe.maxPayload, limitPayloadBytes/2, "largest payload: %s", probe.maxPayloadType)
			require.Less(t, probe.maxEvents, limitHistoryEvents/2, "history events")
			require.Less(t, probe.maxBytes, limitHistoryBytes/2, "history bytes")
			require.Less(t, probe.maxPendingSignals, limitPendingSignals/2, "pending signals")
			require.Less(t, probe.maxPendingChildren, limitPendingChildren/2, "pending children")
			require.Less(t, probe.maxPendingActivity, limitPendingActivity/2, "pending activities")
		})
	}
}
