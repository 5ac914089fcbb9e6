package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

const secretV = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: %q\n"

// `flotilla diff` says what the next apply would change, object by object against live state: nothing
// on clusters that run what they should (exit 0); a field changed by hand, with both values, on the one
// cluster where it was (exit 1); for a commit the GitRepo has not seen yet, the upgrade each cluster would
// get (a changed field, an object created, one deleted, a Secret's value hidden), while nothing is
// applied; and nothing again once that commit is deployed.
func TestADiffShowsDriftAndWhatAnUnseenCommitWouldChange(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	s.AddConfinedClusters("a", harness.ConfinedCluster{Name: "df-1", Labels: map[string]string{"df": "yes"}},
		harness.ConfinedCluster{Name: "df-2", Labels: map[string]string{"df": "yes"}})
	repo := s.NewRepo(map[string]string{
		"web/app.yaml":    fmt.Sprintf(configMapV, "1"),
		"web/old.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\ndata:\n  x: \"1\"\n",
		"web/secret.yaml": fmt.Sprintf(secretV, "s3cret-one"),
	})
	// Polled hourly: a new commit reaches the clusters only when asked to, so it can be diffed first.
	s.StartGitRepo(api.GitRepoInput{GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "diffed"}, Spec: fleet.GitRepoSpec{
		Repo: repo.URL(), Branch: "main", PollingInterval: "1h",
		Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"df": "yes"}}}}}},
		Flotilla: &api.RunOptions{CheckInterval: "1s"}})
	v1 := s.WaitStatus("diffed", 3*time.Minute, "v1 everywhere", harness.AllReady).Commit

	res := s.CLI("diff", "diffed")
	require.Equal(t, 0, res.ExitCode, "%s\n%s", res.Stdout, res.Stderr)
	require.Contains(t, res.Stdout, "gitrepo/diffed at commit "+api.ShortCommit(v1)+": 2 cluster(s), 0 with changes")
	require.Contains(t, res.Stdout, "cluster df-1: no changes")
	require.Contains(t, res.Stdout, "cluster df-2: no changes")
	one := s.CLIRun("status", "diffed", "--cluster", "df-1")
	require.Regexp(t, `(?m)^df-1\s+Ready`, one)
	require.NotRegexp(t, `(?m)^df-2`, one, "a page holds the clusters asked for")

	// A change by hand on df-1 only.
	setByHand(t, s, "a", "df-1", "app", "v", "by-hand")

	res = s.CLI("diff", "diffed")
	require.Equal(t, 1, res.ExitCode, "%s\n%s", res.Stdout, res.Stderr)
	require.Contains(t, res.Stdout, "1 with changes")
	require.Contains(t, res.Stdout, "cluster df-1:\n  bundle diffed-web (release df-1/diffed-web): no revision")
	require.Contains(t, res.Stdout, "no revision: drift stays: correctDrift is off")
	require.Contains(t, res.Stdout, "~ ConfigMap df-1/app\n        data.v: \"by-hand\" → \"1\"")
	require.Contains(t, res.Stdout, "cluster df-2: no changes")
	res = s.CLI("diff", "diffed", "--cluster", "df-1", "-o", "json")
	require.Equal(t, 1, res.ExitCode, res.Stderr)
	var out struct {
		Commit   string            `json:"commit"`
		Clusters []api.ClusterDiff `json:"clusters"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out), res.Stdout)
	require.Len(t, out.Clusters, 1)
	web := out.Clusters[0].Bundles[0]
	require.Equal(t, api.DiffNone, web.Action)
	require.Equal(t, []api.ObjectDiff{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "df-1", Name: "app", Change: api.ObjectUpdate,
		Fields: []api.FieldDiff{{Path: "data.v", Live: `"by-hand"`, Desired: `"1"`}}}}, web.Objects)

	// A commit the GitRepo has not polled yet: v changes, "old" goes, "extra" comes, the password changes.
	v2 := repo.Commit(map[string]string{
		"web/app.yaml":    fmt.Sprintf(configMapV, "2"),
		"web/old.yaml":    "",
		"web/extra.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  y: \"1\"\n",
		"web/secret.yaml": fmt.Sprintf(secretV, "s3cret-two"),
	}, "v2")
	res = s.CLI("diff", "diffed", "--commit", v2)
	require.Equal(t, 1, res.ExitCode, "%s\n%s", res.Stdout, res.Stderr)
	require.Contains(t, res.Stdout, "gitrepo/diffed at commit "+api.ShortCommit(v2)+": 2 cluster(s), 2 with changes")
	require.Contains(t, res.Stdout, ": upgrade to revision 2: the desired state changed")
	require.Contains(t, res.Stdout, "~ ConfigMap df-2/app\n        data.v: \"1\" → \"2\"")
	require.Contains(t, res.Stdout, "~ ConfigMap df-1/app\n        data.v: \"by-hand\" → \"2\"")
	require.Contains(t, res.Stdout, "+ ConfigMap df-2/extra")
	require.Contains(t, res.Stdout, "- ConfigMap df-2/old")
	require.Contains(t, res.Stdout, "~ Secret df-2/creds\n        data.password: \"***\" → \"***\"")
	require.NotContains(t, res.Stdout, "s3cret")
	require.NotContains(t, res.Stdout, "czNjcmV0", "nor the values base64-encoded")
	require.Equal(t, "1", s.ConfigMapData("a", "df-2", "app")["v"], "a diff applies nothing")
	require.Nil(t, s.ConfigMapData("a", "df-2", "extra"))
	st, err := s.Status("diffed")
	require.NoError(t, err)
	require.Equal(t, v1, st.Commit, "a diff of another commit does not move the GitRepo")

	// Deployed, the same commit has nothing left to change, drift included (the upgrade reverted it).
	s.CLIRun("sync", "diffed")
	s.WaitStatus("diffed", 3*time.Minute, "v2 everywhere", func(st api.GitRepoStatus) bool { return st.Commit == v2 && harness.AllReady(st) })
	res = s.CLI("diff", "diffed")
	require.Equal(t, 0, res.ExitCode, "%s\n%s", res.Stdout, res.Stderr)
	require.Contains(t, res.Stdout, "0 with changes")

	res = s.CLI("diff", "diffed", "--cluster", "nowhere")
	require.Equal(t, 2, res.ExitCode, "an error is not a change")
	require.Contains(t, res.Stderr, `does not deploy to cluster "nowhere"`)
}

// A pull-mode cluster is diffed by its own agent, from what the management side rendered for it: drift
// that correctDrift would revert, and the upgrade a commit not deployed yet would make, chart rendered
// and dry-run on the agent's side.
func TestAnAgentClusterIsDiffedByItsAgent(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "e"}}})
	repo := s.NewRepo(fqdnBundle())
	s.AddAgentCluster("e", map[string]string{"site": "edge"}, fqdnValues("e.example"))
	s.StartAgent("e", "e")
	// Checked hourly, so the drift below is still there when diffed.
	s.StartGitRepo(api.GitRepoInput{GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "pulled"}, Spec: fleet.GitRepoSpec{
		Repo: repo.URL(), Branch: "main", PollingInterval: "1h", CorrectDrift: &fleet.CorrectDrift{Enabled: true},
		Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"site": "edge"}}}}}},
		Flotilla: &api.RunOptions{CheckInterval: "1h"}})
	s.WaitStatus("pulled", 3*time.Minute, "deployed by the agent", harness.AllReady)

	setByHand(t, s, "e", "web", "web", "fqdn", "elsewhere.example")

	res := s.CLI("diff", "pulled")
	require.Equal(t, 1, res.ExitCode, "%s\n%s", res.Stdout, res.Stderr)
	require.Contains(t, res.Stdout, "(release web/pulled-web): repair to revision 2: correctDrift: the drift is reverted")
	require.Contains(t, res.Stdout, "~ ConfigMap web/web\n        data.fqdn: \"elsewhere.example\" → \"e.example\"")

	files := fqdnBundle()
	v2 := repo.Commit(map[string]string{"web/chart/templates/configmap.yaml": strings.Replace(files["web/chart/templates/configmap.yaml"],
		"\ndata:\n", "\ndata:\n  tier: edge\n", 1)}, "v2")
	res = s.CLI("diff", "pulled", "--commit", v2)
	require.Equal(t, 1, res.ExitCode, "%s\n%s", res.Stdout, res.Stderr)
	require.Contains(t, res.Stdout, ": upgrade to revision 2: the desired state changed")
	require.Contains(t, res.Stdout, "data.fqdn: \"elsewhere.example\" → \"e.example\"")
	require.Contains(t, res.Stdout, "data.tier: (absent) → \"edge\"")
	require.Equal(t, "elsewhere.example", s.ConfigMapData("e", "web", "web")["fqdn"], "a diff applies nothing")
}

// setByHand sets one key of a ConfigMap's data as a person would, behind Flotilla's back.
func setByHand(t *testing.T, s *harness.Stack, backing, namespace, name, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cm, err := s.Kube(backing).CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data[key] = value
	_, err = s.Kube(backing).CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
}
