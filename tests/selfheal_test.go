package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// seedBundle is 10 ConfigMaps and a Deployment: 11 objects.
func seedBundle() map[string]string {
	var docs []string
	for i := 0; i < 10; i++ {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  n: \"%d\"\n", i, i))
	}
	return map[string]string{
		"seed/fleet.yaml": "name: seed\ndefaultNamespace: seed\n",
		"seed/cms.yaml":   strings.Join(docs, "---\n"),
		"seed/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: registry.invalid/api:1}]
`,
	}
}

func seedGitRepo(repo string, correct bool) api.GitRepoInput {
	spec := fleet.GitRepoSpec{Repo: repo, Branch: "main", PollingInterval: "1s", Paths: []string{"seed"},
		Targets: []fleet.GitTarget{{ClusterName: "a"}}}
	if correct {
		spec.CorrectDrift = &fleet.CorrectDrift{Enabled: true}
	}
	return api.GitRepoInput{GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "seed"}, Spec: spec},
		Flotilla: &api.RunOptions{CheckInterval: "1s", ResyncInterval: "3s"}}
}

func seedCluster(st api.GitRepoStatus) api.ClusterStatus {
	c, _ := harness.Cluster(st, "a")
	return c
}

// Fleet counts a resource deleted by hand as ready (11/11); here it must not count as ready. It is `missing`, the counts say
// 10/11, a changed Deployment is `modified`; with correctDrift enabled both are restored.
func TestDeletedAndModifiedObjectsAreReportedThenCorrected(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a", Workloads: true}}})
	repo := s.NewRepo(seedBundle())
	s.AddCluster("a", "a", nil, nil)
	s.StartGitRepo(seedGitRepo(repo.URL(), false))
	st := s.WaitStatus("seed", 2*time.Minute, "11/11 ready", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.ResourceCounts.Ready == 11
	})
	require.Equal(t, 11, st.ResourceCounts.DesiredReady)

	ctx := context.Background()
	kube := s.Kube("a")
	require.NoError(t, kube.CoreV1().ConfigMaps("seed").Delete(ctx, "cm-5", metav1.DeleteOptions{}))
	st = s.WaitStatus("seed", time.Minute, "cm-5 missing", func(st api.GitRepoStatus) bool {
		return st.ResourceCounts.Missing == 1
	})
	c := seedCluster(st)
	require.Equal(t, 11, c.ResourceCounts.DesiredReady, "desiredReady counts the missing object")
	require.Equal(t, 10, c.ResourceCounts.Ready)
	require.Equal(t, api.StateModified, c.State, "the cluster is not Ready")
	require.Contains(t, c.Message, "configmap seed/cm-5 missing")
	require.Equal(t, 0, st.ReadyClusters)

	_, err := kube.AppsV1().Deployments("seed").Patch(ctx, "api", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	st = s.WaitStatus("seed", time.Minute, "the Deployment modified", func(st api.GitRepoStatus) bool {
		return st.ResourceCounts.Modified == 1 && st.ResourceCounts.Missing == 1
	})
	require.Contains(t, seedCluster(st).Message, "deployment seed/api modified")
	s.WaitChecks("seed", "a", 3) // drift is reported, not corrected, by default
	require.Nil(t, s.ConfigMapData("a", "seed", "cm-5"))
	revisions := len(s.History("a", "seed", "seed"))

	// Turn correctDrift on through the CLI, as a user would.
	s.Apply(harness.GitRepoYAML("seed", repo.URL(), `  paths: [seed]
  targets: [{clusterName: a}]
  correctDrift: {enabled: true}
`))
	st = s.WaitStatus("seed", 2*time.Minute, "11/11 ready again", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.ResourceCounts.Ready == 11
	})
	require.Equal(t, "5", s.ConfigMapData("a", "seed", "cm-5")["n"], "the deleted object is recreated")
	dep, err := kube.AppsV1().Deployments("seed").Get(ctx, "api", metav1.GetOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 2, *dep.Spec.Replicas, "the modified field is reverted")
	require.Len(t, s.History("a", "seed", "seed"), revisions+1, "one correction, one revision")
}

// A user who set correctDrift off, finds an object deleted by hand, and turns it on without a commit gets
// the object back from the first check of the new desired state, not from a worker restart: the cached
// rendering made under the old option must not answer for the new one.
func TestCorrectDriftTurnedOnWithoutACommitRestoresAtTheNextCheck(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a", Workloads: true}}})
	repo := s.NewRepo(seedBundle())
	s.AddCluster("a", "a", nil, nil)
	in := seedGitRepo(repo.URL(), false)
	in.GitRepo.Spec.CorrectDrift = &fleet.CorrectDrift{Enabled: false} // said explicitly, as the user did
	s.StartGitRepo(in)
	s.WaitStatus("seed", 2*time.Minute, "11/11 ready", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.ResourceCounts.Ready == 11
	})
	revisions := len(s.History("a", "seed", "seed"))

	require.NoError(t, s.Kube("a").CoreV1().ConfigMaps("seed").Delete(context.Background(), "cm-5", metav1.DeleteOptions{}))
	st := s.WaitStatus("seed", time.Minute, "cm-5 missing", func(st api.GitRepoStatus) bool { return st.ResourceCounts.Missing == 1 })
	require.Contains(t, seedCluster(st).Message, "configmap seed/cm-5 missing")
	s.WaitChecks("seed", "a", 2)
	require.Nil(t, s.ConfigMapData("a", "seed", "cm-5"), "with correctDrift off the drift is reported, not corrected")
	before, err := s.ClusterStatus("seed", "a")
	require.NoError(t, err)

	s.Apply(harness.GitRepoYAML("seed", repo.URL(), "  paths: [seed]\n  targets: [{clusterName: a}]\n  correctDrift: {enabled: true}\n"))
	require.Eventually(t, func() bool {
		now, err := s.ClusterStatus("seed", "a")
		return err == nil && now.Generation > before.Generation
	}, harness.Patience(time.Minute), 100*time.Millisecond, "the cluster workflow takes the new desired state")
	// One check ends once the next begins: the check that took the new desired state is over.
	s.WaitChecks("seed", "a", 1)
	require.Equal(t, "5", s.ConfigMapData("a", "seed", "cm-5")["n"], "the check of the new desired state restores the deleted object")
	require.Len(t, s.History("a", "seed", "seed"), revisions+1, "one correction, one revision")
	s.WaitStatus("seed", time.Minute, "11/11 ready again", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.ResourceCounts.Ready == 11
	})
}

// Two of Fleet's known failures: deleting generated state by hand (the Helm release Secrets, a cluster's
// workflow) is repaired by the next check; restarting the worker or the Temporal server re-applies nothing.
func TestGeneratedStateComesBackAndRestartsAddNoRevisions(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a", Workloads: true}}, OwnTemporal: true})
	repo := s.NewRepo(seedBundle())
	s.AddCluster("a", "a", nil, nil)
	s.StartGitRepo(seedGitRepo(repo.URL(), true))
	ready11 := func(st api.GitRepoStatus) bool { return harness.AllReady(st) && st.ResourceCounts.Ready == 11 }
	s.WaitStatus("seed", 2*time.Minute, "11/11 ready", ready11)
	require.Len(t, s.History("a", "seed", "seed"), 1)

	// Restarts: the worker (SIGKILL), then the Temporal server on the same database.
	s.KillWorker()
	s.StartWorker()
	s.WaitChecks("seed", "a", 3)
	s.RestartTemporal()
	s.WaitChecks("seed", "a", 3)
	st := s.WaitStatus("seed", time.Minute, "11/11 ready after restarts", ready11)
	require.Len(t, s.History("a", "seed", "seed"), 1, "no restart re-applies an in-sync release")
	require.Equal(t, 1, seedCluster(st).Bundles[0].Revision)

	// The release's Helm Secrets deleted by hand: reinstalled at the next check, objects kept.
	ctx := context.Background()
	kube := s.Kube("a")
	secrets, err := kube.CoreV1().Secrets("seed").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=seed"})
	require.NoError(t, err)
	require.NotEmpty(t, secrets.Items)
	for _, sec := range secrets.Items {
		require.NoError(t, kube.CoreV1().Secrets("seed").Delete(ctx, sec.Name, metav1.DeleteOptions{}))
	}
	helm := s.Helm("a")
	require.Eventually(t, func() bool {
		h, err := helm.History(ctx, "seed", "seed")
		return err == nil && len(h) == 1 && h[0].Status == "deployed"
	}, harness.Patience(time.Minute), 200*time.Millisecond, "the release record comes back")
	s.WaitStatus("seed", time.Minute, "11/11 ready", ready11)

	// The cluster's workflow terminated by hand (as from the Web UI): it comes back, without re-applying.
	id := api.ClusterWorkflowID("seed", "a")
	require.NoError(t, s.Client.TerminateWorkflow(ctx, id, "", "terminated by a test, as from the Web UI"))
	require.Eventually(t, func() bool {
		d, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
		return err == nil && d.WorkflowExecutionInfo.GetStatus().String() == "Running"
	}, harness.Patience(time.Minute), 200*time.Millisecond, "the cluster workflow runs again")
	s.WaitChecks("seed", "a", 2)
	s.WaitStatus("seed", time.Minute, "11/11 ready", ready11)
	require.Len(t, s.History("a", "seed", "seed"), 1)
}

// A cluster that no longer matches a target has the GitRepo's releases uninstalled; deleting a GitRepo with
// keepResources drops only the Helm record.
func TestLeavingTheTargetsUninstallsAndKeepResourcesKeeps(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}, {Name: "b"}}})
	repo := s.NewRepo(map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: \"1\"\n"})
	s.AddCluster("a", "a", map[string]string{"env": "x"}, nil)
	s.AddCluster("b", "b", map[string]string{"env": "x"}, nil)
	s.Apply(harness.GitRepoYAML("leave", repo.URL(), "  paths: [app]\n  targets: [{clusterSelector: {matchLabels: {env: x}}}]\n"))
	s.WaitStatus("leave", 2*time.Minute, "both Ready", func(st api.GitRepoStatus) bool { return harness.AllReady(st) && st.DesiredReadyClusters == 2 })
	s.Apply(harness.GitRepoYAML("kept", repo.URL(), "  paths: [app]\n  targetNamespace: kept\n  keepResources: true\n  targets: [{clusterName: a}]\n"))
	s.WaitStatus("kept", 2*time.Minute, "Ready", harness.AllReady)

	// b loses its label: its release goes, a's stays.
	s.AddCluster("b", "b", map[string]string{"env": "gone"}, nil)
	s.WaitStatus("leave", time.Minute, "only a targeted", func(st api.GitRepoStatus) bool {
		return st.DesiredReadyClusters == 1 && harness.AllReady(st)
	})
	require.Eventually(t, s.NoReleases("b", "leave"), harness.Patience(time.Minute), 200*time.Millisecond)
	require.Nil(t, s.ConfigMapData("b", "default", "app"), "the objects are uninstalled from b")
	require.Len(t, s.Releases("a", "leave"), 1)

	// Deleting a GitRepo with keepResources forgets the release and keeps its objects.
	s.CLIRun("delete", "kept")
	require.Eventually(t, s.NoReleases("a", "kept"), harness.Patience(time.Minute), 200*time.Millisecond)
	require.Equal(t, "1", s.ConfigMapData("a", "kept", "app")["v"], "keepResources keeps the objects")
	require.Eventually(t, func() bool {
		d, err := s.Client.DescribeWorkflowExecution(context.Background(), api.GitRepoWorkflowID("kept"), "")
		return err == nil && d.WorkflowExecutionInfo.GetStatus().String() == "Completed"
	}, harness.Patience(time.Minute), 200*time.Millisecond, "the GitRepo workflow ends once removed everywhere")
}
