package tests

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/activities"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// Two agent-mode clusters, each with its own agent and key (ADR 26). Anyone holding the Temporal namespace's
// credentials (an agent's included) can start a workflow, poll any queue and queue any task: the test does
// all three, as an attacker would, against e1, and nothing of e1's opens or is applied anywhere but on e1.
func TestAnAgentReachesOnlyItsOwnClustersPackagesAndTasks(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "e1"}, {Name: "e2"}}})
	repo := s.NewRepo(fqdnBundle())
	s.AddAgentCluster("e1", map[string]string{"site": "edge"}, fqdnValues("e1.private.example"))
	s.AddAgentCluster("e2", map[string]string{"site": "edge"}, fqdnValues("e2.example"))
	genuine := s.StartAgent("e1", "e1")
	s.StartAgent("e2", "e2")
	s.StartGitRepo(api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "edge"}, Spec: fleet.GitRepoSpec{
			Repo: repo.URL(), Branch: "main", PollingInterval: "1s", Targets: []fleet.GitTarget{{ClusterGroup: "default"}},
		}},
		Flotilla: &api.RunOptions{CheckInterval: "2s"},
	})
	s.WaitStatus("edge", 2*time.Minute, "e1 and e2 Ready", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.DesiredReadyClusters == 2
	})
	require.Equal(t, "e1.private.example", s.ConfigMapData("e1", "web", "web")["fqdn"])

	// Read: e1's package, asked for through a ContentWorkflow, comes sealed to e1's key.
	pkg := preparedPackage(t, s, api.ClusterWorkflowID("edge", "e1"))
	target := api.ClusterTarget{GitRepo: "edge", Cluster: "e1", Agent: true}
	chunks := []api.ContentChunk{{Digest: pkg.Package, Length: pkg.PackageSize, Bundle: pkg.Bundle}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "stolen-read", TaskQueue: api.DefaultTaskQueue},
		api.ContentWorkflowType, api.ReadContentInput{Target: target, Chunks: chunks})
	require.NoError(t, err)
	var sealed []byte
	require.NoError(t, run.Get(ctx, &sealed))
	require.NotContains(t, string(sealed), "e1.private.example")
	_, err = gzip.NewReader(bytes.NewReader(sealed))
	require.Error(t, err, "not a package anyone can unpack")
	e1Key, e2Key := s.InstallationKey.ForCluster("", "e1"), s.InstallationKey.ForCluster("", "e2")
	_, err = e2Key.Open(sealedAAD(t, chunks), sealed)
	require.Error(t, err, "e2's agent cannot open it")
	opened, err := e1Key.Open(sealedAAD(t, chunks), sealed)
	require.NoError(t, err, "e1's agent can")
	unpacked := gunzip(t, opened)
	require.Contains(t, unpacked, "e1.private.example", "what e1's agent opens is e1's package")

	// Apply: a rogue agent under e1's name, holding e2's key (the credentials of any agent), polls e1's queue
	// while e1's own agent is away, and a new commit arrives. It refuses every task: nothing of e1's lands on
	// the cluster it reaches (e2's).
	require.NoError(t, genuine.Stop(10*time.Second))
	rogueLog := filepath.Join(s.Dir, "agent-rogue.log")
	rogue, err := devenv.StartAgent(devenv.AgentOptions{Bin: harness.BinDir(), Address: s.Address(), Cluster: "e1", Key: e2Key,
		Kubeconfig: s.K8s.Kubeconfig("e2"), CacheDir: filepath.Join(s.Dir, "agent-rogue"), LogFile: rogueLog, ExtraArgs: s.ConnArgs()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rogue.Stop(5 * time.Second) })
	files := fqdnBundle()
	files["web/chart/templates/configmap.yaml"] = strings.Replace(files["web/chart/templates/configmap.yaml"], "\ndata:\n", "\ndata:\n  version: \"2\"\n", 1)
	second := repo.Commit(files, "two")
	require.Eventually(t, func() bool {
		log, err := os.ReadFile(rogueLog)
		return err == nil && strings.Contains(string(log), "refusing a task this agent cannot trust")
	}, harness.Patience(2*time.Minute), 200*time.Millisecond, "the rogue agent is given e1's tasks, and refuses them")
	require.Equal(t, "e2.example", s.ConfigMapData("e2", "web", "web")["fqdn"], "nothing of e1's reached the rogue's cluster")
	require.NoError(t, rogue.Stop(10*time.Second))
	require.NotContains(t, proc.Tail(rogueLog, 200), "e1.private.example")

	// e1's own agent back: e1 converges to the new commit.
	genuine = s.StartAgent("e1", "e1")
	s.WaitStatus("edge", 2*time.Minute, "e1 at the new commit", func(st api.GitRepoStatus) bool {
		c, _ := harness.Cluster(st, "e1")
		return c.Commit == second && c.State == api.StateReady
	})
	require.Equal(t, "2", s.ConfigMapData("e1", "web", "web")["version"])

	// A forged task: a workflow of the attacker's own queues an Apply on e1's queue, whose sweep keeps
	// nothing (it would uninstall every release of the GitRepo). e1's agent refuses it; the release stays.
	w := worker.New(s.Client, "forger", worker.Options{})
	w.RegisterWorkflowWithOptions(forgedApply, workflow.RegisterOptions{Name: "ForgedApply"})
	require.NoError(t, w.Start())
	defer w.Stop()
	run, err = s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "forged-apply", TaskQueue: "forger"}, "ForgedApply",
		api.ApplyInput{Target: target, Sweep: &api.Sweep{}, Generation: 1 << 40})
	require.NoError(t, err)
	err = run.Get(ctx, nil)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr, "%v", err)
	require.Equal(t, api.ErrTypeNotGranted, appErr.Type(), appErr.Error())
	require.Len(t, s.Releases("e1", "edge"), 1, "the release is still there")
	require.Equal(t, "2", s.ConfigMapData("e1", "web", "web")["version"])
}

// forgedApply queues one Apply on e1's agent queue, as any principal of the namespace could.
func forgedApply(ctx workflow.Context, in api.ApplyInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           api.AgentTaskQueue(api.DefaultTaskQueue, "", in.Target.Cluster),
		StartToCloseTimeout: time.Minute, ScheduleToStartTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	return workflow.ExecuteActivity(ctx, api.ActivityApply, in).Get(ctx, nil)
}

// preparedPackage is a package the management side prepared for a cluster workflow's agent, read from the
// Observe it scheduled, as anyone who can read the namespace's histories can.
func preparedPackage(t *testing.T, s *harness.Stack, workflowID string) api.PreparedBundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	it := s.Client.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		attrs := ev.GetActivityTaskScheduledEventAttributes()
		if attrs == nil || attrs.GetActivityType().GetName() != api.ActivityObserve {
			continue
		}
		var in api.ObserveInput
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(attrs.GetInput(), &in))
		for _, p := range in.Prepared {
			if p.Package != "" {
				return p
			}
		}
	}
	require.FailNow(t, "no prepared package in the history of "+workflowID)
	return api.PreparedBundle{}
}

// sealedAAD is what the management side binds a ContentWorkflow's answer to: the cluster and the chunks.
func sealedAAD(t *testing.T, chunks []api.ContentChunk) []byte {
	t.Helper()
	return activities.ContentAAD("", "e1", chunks)
}

func gunzip(t *testing.T, data []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	var out bytes.Buffer
	_, err = out.ReadFrom(zr)
	if err != nil && !errors.Is(err, gzip.ErrChecksum) {
		require.NoError(t, err)
	}
	return out.String()
}
