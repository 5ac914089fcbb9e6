package tests

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// clusterNames lists the names in a GitRepo status's clusters (or removing clusters).
func clusterNames(cs []api.ClusterStatus) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// A cluster removed with `flotilla cluster remove` loses what every GitRepo installed there before the
// inventory forgets it (a Fleet user saw the release and objects stay while status silently stopped listing
// the cluster); the other clusters are not touched. With --keep-workloads the GitRepos forget it and its
// workloads stay. A cluster that cannot be reached is never forgotten with its workloads left behind: the
// command says which GitRepo could not uninstall and why, and the cluster stays listed as leaving until
// it is removed again, here with --keep-workloads.
func TestARemovedClusterIsUninstalledBeforeItIsForgotten(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "one"}, {Name: "two"}, {Name: "three"}}})
	for _, c := range []string{"one", "two", "three"} {
		s.AddCluster(c, c, map[string]string{"env": "x"}, nil)
	}
	repo := s.NewRepo(map[string]string{
		"web/fleet.yaml": "defaultNamespace: web\n",
		"web/cm.yaml":    fmt.Sprintf(configMapV, "1"),
	})
	s.Apply(harness.GitRepoYAML("shop", repo.URL(), "  paths: [web]\n  targets: [{clusterSelector: {matchLabels: {env: x}}}]\n"))
	// A second GitRepo on "one" only: the removal waits for every GitRepo of the installation.
	s.Apply(harness.GitRepoYAML("extra", repo.URL(), "  paths: [web]\n  targetNamespace: extra\n  targets: [{clusterName: one}]\n"))
	s.WaitStatus("shop", 3*time.Minute, "Ready on three clusters", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.DesiredReadyClusters == 3
	})
	s.WaitStatus("extra", 3*time.Minute, "Ready on one", harness.AllReady)
	require.Contains(t, s.Releases("one", "extra"), "extra-web")

	// (a) One of three: its releases and objects are gone when the command returns, status no longer lists
	// it, and the other clusters are untouched.
	res := s.CLIWithin(4*time.Minute, "cluster", "remove", "one", "--timeout", "3m")
	require.Equal(t, 0, res.ExitCode, "stdout %s\nstderr %s", res.Stdout, res.Stderr)
	require.Equal(t, "cluster/one removed\n", res.Stdout)
	require.Empty(t, s.Releases("one", "shop"), "shop uninstalled from one")
	require.Empty(t, s.Releases("one", "extra"), "extra uninstalled from one")
	require.Nil(t, s.ConfigMapData("one", "web", "app"), "its objects are gone")
	require.Nil(t, s.ConfigMapData("one", "extra", "app"))
	st, err := s.Status("shop")
	require.NoError(t, err)
	require.Equal(t, []string{"three", "two"}, sortedNames(st.Clusters), "status no longer lists it")
	require.Empty(t, st.Removing)
	extra, err := s.Status("extra")
	require.NoError(t, err)
	require.Empty(t, extra.Clusters)
	for _, c := range []string{"two", "three"} {
		require.Len(t, s.History(c, "web", "shop-web"), 1, "%s was not redeployed", c)
		require.Equal(t, "1", s.ConfigMapData(c, "web", "app")["v"], c)
	}
	require.NotContains(t, s.CLIRun("cluster", "list"), "one")

	// (b) --keep-workloads --no-wait: the GitRepos forget "two" without touching it, and the inventory
	// forgets it once they have, with no command left waiting.
	res = s.CLI("cluster", "remove", "two", "--keep-workloads", "--no-wait")
	listed := regexp.MustCompile(`(?m)^three\s`)
	require.Equal(t, 0, res.ExitCode, "stdout %s\nstderr %s", res.Stdout, res.Stderr)
	require.Contains(t, res.Stdout, "cluster/two leaving: its GitRepos forget it, leaving its releases and objects in place")
	require.Eventually(t, func() bool {
		list := s.CLI("cluster", "list")
		return list.ExitCode == 0 && listed.MatchString(list.Stdout) && !regexp.MustCompile(`(?m)^two\s`).MatchString(list.Stdout)
	}, harness.Patience(3*time.Minute), 500*time.Millisecond, "the inventory forgets two by itself")
	require.Contains(t, s.Releases("two", "shop"), "shop-web", "the release stays")
	require.Len(t, s.History("two", "web", "shop-web"), 1)
	require.Equal(t, "1", s.ConfigMapData("two", "web", "app")["v"], "its objects stay")
	st, err = s.Status("shop")
	require.NoError(t, err)
	require.Equal(t, []string{"three"}, sortedNames(st.Clusters), "status forgets it")
	require.Empty(t, st.Removing)

	// (c) An unreachable cluster, the last of shop's: the command reports it, and it stays leaving.
	s.WaitStatus("shop", time.Minute, "Ready on three", harness.AllReady)
	require.NoError(t, s.K8s.StopAPIServer("three"))
	res = s.CLI("cluster", "remove", "three", "--no-wait")
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	require.Contains(t, res.Stdout, "cluster/three leaving: its GitRepos uninstall from it; the inventory forgets it once they are done; run `flotilla cluster remove three` to wait")
	// The CLI below is bounded at 30 s and reports the uninstall's last error: wait until there is one, so
	// that a loaded machine's slow first attempt does not fail the command's wording.
	s.WaitStatus("shop", 3*time.Minute, "three being removed, its uninstall failing", func(st api.GitRepoStatus) bool {
		return len(st.Clusters) == 0 && len(st.Removing) == 1 && strings.Contains(st.Removing[0].Message, "uninstall failed")
	})
	require.Contains(t, s.CLIRun("status", "shop"), "three (removing)")
	// Run again, it retries at once and waits.
	res = s.CLIWithin(3*time.Minute, "cluster", "remove", "three", "--timeout", "30s")
	require.Equal(t, 3, res.ExitCode, "stdout %s\nstderr %s", res.Stdout, res.Stderr)
	require.Contains(t, res.Stderr, `cluster "three" is still leaving after 30s`)
	require.Contains(t, res.Stderr, `gitrepo "shop": ErrApplied: uninstall failed, retrying until it succeeds: cluster "three"`)
	require.Contains(t, res.Stderr, "flotilla cluster remove three --keep-workloads")
	require.Regexp(t, `three\s+leaving\s`, s.CLIRun("cluster", "list"), "it stays listed as leaving")
	st, err = s.Status("shop")
	require.NoError(t, err)
	require.Empty(t, st.Clusters, "no longer targeted")
	require.Equal(t, []string{"three"}, sortedNames(st.Removing), "shown while its uninstall fails")
	require.False(t, st.Removing[0].Reachable)
	res = s.CLI("cluster", "add", "three", "--replace", "--kubeconfig", s.K8s.Kubeconfig("three"))
	require.Equal(t, 1, res.ExitCode)
	require.Contains(t, res.Stderr, `cluster "three" is leaving`)

	// Removed again with --keep-workloads: forgotten, without ever reaching it.
	res = s.CLIWithin(4*time.Minute, "cluster", "remove", "three", "--keep-workloads", "--timeout", "3m")
	require.Equal(t, 0, res.ExitCode, "stdout %s\nstderr %s", res.Stdout, res.Stderr)
	require.Equal(t, "cluster/three removed (its releases and objects stay)\n", res.Stdout)
	require.NotContains(t, s.CLIRun("cluster", "list"), "three")
	st, err = s.Status("shop")
	require.NoError(t, err)
	require.Empty(t, st.Removing)
	// Replay fixtures of the leaving path: a GitRepo that let three clusters go three ways, the workflow
	// whose uninstall failed until it was told to forget, and the inventory that marked them leaving and
	// forgot them (inventory-leave.json is one recorded before the inventory decided, and stays).
	s.RecordHistories(map[string]string{
		"gitrepo-leave.json":             api.GitRepoWorkflowID("shop"),
		"cluster-leave-unreachable.json": api.ClusterWorkflowID("shop", "three"),
		"inventory-leave-decided.json":   api.InventoryWorkflowID(api.DefaultTaskQueue),
	})
}

func sortedNames(cs []api.ClusterStatus) []string {
	names := clusterNames(cs)
	sort.Strings(names)
	return names
}

// namespaceGone is a condition: the namespace is deleted (gone, or terminating: these API servers run no
// namespace controller to finish what the deletion started).
func namespaceGone(cs *kubernetes.Clientset, ns string) func() bool {
	return func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || err == nil && n.DeletionTimestamp != nil
	}
}

// Fleet's deleteNamespace: a GitRepo deleted with it loses its targetNamespace on every cluster once it is
// uninstalled, but never "default"; a bundle's fleet.yaml deleteNamespace deletes its namespace when its
// release is uninstalled (here: the bundle deleted from the repository), unless another release still
// lives there.
func TestDeleteNamespaceDeletesWhatTheGitRepoOrBundleOwned(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}, {Name: "b"}}})
	s.AddCluster("a", "a", map[string]string{"env": "x"}, nil)
	s.AddCluster("b", "b", map[string]string{"env": "x"}, nil)
	both := "  targets: [{clusterSelector: {matchLabels: {env: x}}}]\n"
	app := s.NewRepo(map[string]string{"app/cm.yaml": fmt.Sprintf(configMapV, "1")})
	s.Apply(harness.GitRepoYAML("gone", app.URL(), "  paths: [app]\n  targetNamespace: shop-ns\n  deleteNamespace: true\n"+both))
	s.Apply(harness.GitRepoYAML("stays", app.URL(), "  paths: [app]\n  targetNamespace: default\n  deleteNamespace: true\n"+both))
	bundles := s.NewRepo(map[string]string{
		"own/fleet.yaml":    "defaultNamespace: own-ns\ndeleteNamespace: true\n",
		"own/cm.yaml":       fmt.Sprintf(configMapV, "own"),
		"shared/fleet.yaml": "defaultNamespace: shared-ns\ndeleteNamespace: true\n",
		"shared/cm.yaml":    fmt.Sprintf(configMapV, "shared"),
		"keep/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\ndata:\n  v: \"1\"\n",
	})
	s.Apply(harness.GitRepoYAML("bundles", bundles.URL(), "  targets: [{clusterName: a}]\n"))
	neighbour := s.NewRepo(map[string]string{
		"n/fleet.yaml": "defaultNamespace: shared-ns\n",
		"n/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: neighbour\ndata:\n  v: \"1\"\n",
	})
	s.Apply(harness.GitRepoYAML("neighbour", neighbour.URL(), "  targets: [{clusterName: a}]\n"))
	for _, name := range []string{"gone", "stays", "bundles", "neighbour"} {
		s.WaitStatus(name, 3*time.Minute, "Ready", harness.AllReady)
	}
	require.Equal(t, "1", s.ConfigMapData("b", "shop-ns", "app")["v"])

	s.CLIRun("delete", "gone")
	s.CLIRun("delete", "stays")
	for _, c := range []string{"a", "b"} {
		require.Eventually(t, s.NoReleases(c, "gone"), harness.Patience(2*time.Minute), 200*time.Millisecond, "gone uninstalled from %s", c)
		require.Eventually(t, namespaceGone(s.Kube(c), "shop-ns"), harness.Patience(2*time.Minute), 200*time.Millisecond, "shop-ns deleted on %s", c)
		require.Eventually(t, s.NoReleases(c, "stays"), harness.Patience(2*time.Minute), 200*time.Millisecond, "stays uninstalled from %s", c)
	}
	for _, c := range []string{"a", "b"} {
		ns, err := s.Kube(c).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
		require.NoError(t, err)
		require.Nil(t, ns.DeletionTimestamp, "default is never deleted (%s)", c)
	}

	// Two bundles with deleteNamespace leave the repository: own-ns goes with its release; shared-ns still
	// holds the neighbour's release, so it stays, and so does the neighbour's ConfigMap.
	bundles.Commit(map[string]string{"own/fleet.yaml": "", "own/cm.yaml": "", "shared/fleet.yaml": "", "shared/cm.yaml": ""}, "two bundles go")
	require.Eventually(t, releaseGone(s, "a", "bundles", "bundles-shared"), harness.Patience(2*time.Minute), 200*time.Millisecond, "shared uninstalled")
	require.Eventually(t, releaseGone(s, "a", "bundles", "bundles-own"), harness.Patience(2*time.Minute), 200*time.Millisecond, "own uninstalled")
	require.Eventually(t, namespaceGone(s.Kube("a"), "own-ns"), harness.Patience(2*time.Minute), 200*time.Millisecond, "own-ns deleted")
	ns, err := s.Kube("a").CoreV1().Namespaces().Get(context.Background(), "shared-ns", metav1.GetOptions{})
	require.NoError(t, err)
	require.Nil(t, ns.DeletionTimestamp, "shared-ns still holds the neighbour's release")
	require.Equal(t, "1", s.ConfigMapData("a", "shared-ns", "neighbour")["v"])
	require.Equal(t, "1", s.ConfigMapData("a", "default", "keep")["v"], "the bundle left in the repository stays")
}
