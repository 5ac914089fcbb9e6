package agentclient

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/needs"
)

func binDir(t *testing.T) string {
	return needs.LocalClusters(t)
}

// One real cluster (etcd, kube-apiserver, controller-manager, scheduler, kwok) serves every scenario;
// each scenario works in its own namespace.
func TestAgainstARealCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	env, err := localk8s.Start(ctx, localk8s.Options{Dir: t.TempDir(), BinDir: binDir(t), Logger: t.Logf,
		Clusters: []localk8s.ClusterOptions{{Name: "a", Workloads: true}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	c, err := NewPool(zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))).Get(Config{KubeconfigPath: env.Kubeconfig("a")})
	require.NoError(t, err)
	require.NoError(t, c.Ping(ctx))

	t.Run("install and upgrade record revisions and labels", func(t *testing.T) { installAndUpgrade(ctx, t, c) })
	t.Run("a discarded pending revision is reused", func(t *testing.T) { pendingRevisionIsDiscarded(ctx, t, c) })
	t.Run("check release sees readiness, deletion and drift; rollback repairs", func(t *testing.T) { checkAndRollback(ctx, t, c) })
	t.Run("a failed drift correction leaves history alone unless keepFailHistory", func(t *testing.T) { failedRollbackHistory(ctx, t, c) })
	t.Run("compare patches hide known drift; a dropped object is orphaned", func(t *testing.T) { comparePatchesAndOrphans(ctx, t, c) })
	t.Run("uninstall can keep the objects", func(t *testing.T) { uninstallKeepingResources(ctx, t, c) })
	t.Run("namespace labels and annotations are set before the release is applied", func(t *testing.T) { namespaceMetadata(ctx, t, c) })
	t.Run("list releases by label", func(t *testing.T) { listByLabel(ctx, t, c) })
	t.Run("objects the apiserver rejects are invalid", func(t *testing.T) { rejectedObjectsAreInvalid(ctx, t, c) })
	t.Run("a confined release writes and reads nothing outside its namespace", func(t *testing.T) { confinedReleasesStayInTheirNamespace(ctx, t, c) })
	t.Run("concurrent upgrades of one release take turns", func(t *testing.T) { concurrentUpgrades(ctx, t, c) })
	t.Run("valuesFrom reads one key of a ConfigMap or a Secret", func(t *testing.T) { readValues(ctx, t, c) })
	t.Run("a cancelled install keeps the release locked until Helm is done", func(t *testing.T) { cancelledInstall(ctx, t, c) })
	t.Run("a dry run and a diff name what an upgrade would change, and change nothing", func(t *testing.T) { dryRunAndDiff(ctx, t, c) })
}

func apply(ns, name string, labels map[string]string) ApplyRequest {
	return ApplyRequest{Name: name, Namespace: ns, Chart: testChart("1.0.0"), Labels: labels, CreateNamespace: true}
}

func installAndUpgrade(ctx context.Context, t *testing.T, c *Client) {
	ns := "install"
	res, err := c.Install(ctx, ApplyRequest{Name: "web", Namespace: ns, Chart: testChart("1.0.0"),
		Values: map[string]any{"greeting": "hi"}, CreateNamespace: true, Description: "first",
		Labels: map[string]string{api.LabelDeploymentID: "d1", "flotilla.dev/gitrepo": "shop"}})
	require.NoError(t, err)
	require.Equal(t, ApplyResult{Revision: 1, Action: "install"}, res)

	st, err := c.Observe(ctx, ns, "web")
	require.NoError(t, err)
	require.True(t, st.Exists)
	require.Equal(t, "deployed", st.Status)
	require.Equal(t, 1, st.Revision)
	require.Equal(t, "d1", st.DeploymentID)
	require.Equal(t, map[string]string{api.LabelDeploymentID: "d1", "flotilla.dev/gitrepo": "shop"}, st.Labels, "Helm's own labels are left out")
	require.Equal(t, "first", st.Description)
	require.WithinDuration(t, time.Now(), st.Updated, time.Minute)
	require.Equal(t, "hi", configMap(ctx, t, c, ns, "web-config").Data["greeting"])

	res, err = c.Upgrade(ctx, ApplyRequest{Name: "web", Namespace: ns, Chart: testChart("1.1.0"),
		Labels: map[string]string{api.LabelDeploymentID: "d2"}})
	require.NoError(t, err)
	require.Equal(t, ApplyResult{Revision: 2, Action: "upgrade"}, res)

	st, err = c.Observe(ctx, ns, "web")
	require.NoError(t, err)
	require.Equal(t, "deployed", st.Status)
	require.Equal(t, 2, st.Revision)
	require.Equal(t, map[string]string{api.LabelDeploymentID: "d2"}, st.Labels, "labels are replaced, not merged")
	require.Equal(t, "hello", configMap(ctx, t, c, ns, "web-config").Data["greeting"], "values are replaced, not reused")

	hist, err := c.History(ctx, ns, "web")
	require.NoError(t, err)
	require.Len(t, hist, 2)
	require.Equal(t, []string{"superseded", "deployed"}, []string{hist[0].Status, hist[1].Status})
	require.Equal(t, "d1", hist[0].DeploymentID)

	missing, err := c.Observe(ctx, ns, "nothing")
	require.NoError(t, err)
	require.False(t, missing.Exists)
	none, err := c.History(ctx, ns, "nothing")
	require.NoError(t, err)
	require.Empty(t, none)
}

// forcePending writes a revision after the latest one in the given pending state, as a process killed
// in the middle of an upgrade leaves it.
func forcePending(ctx context.Context, t *testing.T, c *Client, ns, name string, status release.Status) {
	store := storage.Init(driver.NewSecrets(c.clientset.CoreV1().Secrets(ns)))
	last, err := store.Last(name)
	require.NoError(t, err)
	pending := *last
	pending.Version = last.Version + 1
	pending.Labels = customLabels(last.Labels)
	pending.Info = &release.Info{FirstDeployed: last.Info.FirstDeployed, LastDeployed: helmtime.Now(), Status: status, Description: "Preparing upgrade"}
	require.NoError(t, store.Create(&pending))
}

func pendingRevisionIsDiscarded(ctx context.Context, t *testing.T, c *Client) {
	ns := "discard"
	_, err := c.Install(ctx, apply(ns, "crashed", map[string]string{api.LabelDeploymentID: "d1"}))
	require.NoError(t, err)
	forcePending(ctx, t, c, ns, "crashed", release.StatusPendingUpgrade)
	_, err = c.Upgrade(ctx, apply(ns, "crashed", map[string]string{api.LabelDeploymentID: "d2"}))
	require.ErrorContains(t, err, "another operation (install/upgrade/rollback) is in progress", "a pending revision blocks upgrades until it is discarded")
	require.False(t, IsUnreachable(err))

	require.NoError(t, c.DiscardPending(ctx, ns, "crashed"))
	st, err := c.Observe(ctx, ns, "crashed")
	require.NoError(t, err)
	require.Equal(t, "deployed", st.Status)
	require.Equal(t, 1, st.Revision)

	res, err := c.Upgrade(ctx, apply(ns, "crashed", map[string]string{api.LabelDeploymentID: "d2"}))
	require.NoError(t, err)
	require.Equal(t, 2, res.Revision, "the discarded revision number is reused")

	// A first install that died leaves nothing once discarded, so installing starts over at revision 1.
	store := storage.Init(driver.NewSecrets(c.clientset.CoreV1().Secrets(ns)))
	require.NoError(t, store.Create(&release.Release{Name: "fresh", Namespace: ns, Version: 1, Chart: testChart("1.0.0"),
		Info: &release.Info{FirstDeployed: helmtime.Now(), LastDeployed: helmtime.Now(), Status: release.StatusPendingInstall}}))
	require.NoError(t, c.DiscardPending(ctx, ns, "fresh"))
	st, err = c.Observe(ctx, ns, "fresh")
	require.NoError(t, err)
	require.False(t, st.Exists)
	res, err = c.Install(ctx, apply(ns, "fresh", nil))
	require.NoError(t, err)
	require.Equal(t, 1, res.Revision)
}

func checkAndRollback(ctx context.Context, t *testing.T, c *Client) {
	ns := "drift"
	_, err := c.Install(ctx, apply(ns, "app", nil))
	require.NoError(t, err)

	requireStates(ctx, t, c, ns, "app", map[string]string{
		"ConfigMap app-config": StateReady, "ConfigMap app-extra": StateReady,
		"Service app": StateReady, "Deployment app": StateReady,
	})
	objs, err := c.CheckRelease(ctx, ns, "app", CheckOptions{})
	require.NoError(t, err)
	require.Equal(t, ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "app-config"}, objs[0].Ref, "sorted by kind, namespace, name")
	require.Equal(t, "Deployment app: Deployment is available. Replicas: 2", objs[2].Message)

	// Fields the manifest does not set are not drift, even when someone else writes them.
	patch(ctx, t, c, "services", ns, "app", `{"metadata":{"labels":{"team":"web"},"annotations":{"note":"x"}},"spec":{"sessionAffinity":"ClientIP"}}`)
	require.NoError(t, c.clientset.CoreV1().ConfigMaps(ns).Delete(ctx, "app-config", metav1.DeleteOptions{}))
	patch(ctx, t, c, "configmaps", ns, "app-extra", `{"data":{"version":"tampered"}}`)
	deployment := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.invalid/other:1"}]}}}}`
	patch(ctx, t, c, "deployments", ns, "app", deployment)

	objs, err = c.CheckRelease(ctx, ns, "app", CheckOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"ConfigMap app-config": StateMissing, "ConfigMap app-extra": StateModified,
		"Service app": StateReady, "Deployment app": StateModified,
	}, states(objs))
	require.Equal(t, "ConfigMap app-extra: modified: data.version", find(objs, "app-extra").Message)
	require.Equal(t, "Deployment app: modified: spec.template.spec.containers[name=web].image", find(objs, "app").Message)

	rev, err := c.Rollback(ctx, RollbackRequest{Namespace: ns, Name: "app", MaxHistory: 2})
	require.NoError(t, err)
	require.Equal(t, 2, rev)
	requireStates(ctx, t, c, ns, "app", map[string]string{
		"ConfigMap app-config": StateReady, "ConfigMap app-extra": StateReady,
		"Service app": StateReady, "Deployment app": StateReady,
	})
	require.Equal(t, "1.0.0", configMap(ctx, t, c, ns, "app-extra").Data["version"])

	_, err = c.Rollback(ctx, RollbackRequest{Namespace: ns, Name: "app", Force: true, MaxHistory: 2})
	require.NoError(t, err, "forced rollback replaces the objects")
	hist, err := c.History(ctx, ns, "app")
	require.NoError(t, err)
	require.Len(t, hist, 2, "maxHistory is honoured")
	require.Equal(t, 3, hist[1].Revision)
}

func failedRollbackHistory(ctx context.Context, t *testing.T, c *Client) {
	ns := "failing-correction"
	_, err := c.Install(ctx, apply(ns, "app", nil))
	require.NoError(t, err)
	// A quota that the remaining ConfigMaps already fill makes recreating the deleted one fail.
	require.NoError(t, c.clientset.CoreV1().ConfigMaps(ns).Delete(ctx, "app-config", metav1.DeleteOptions{}))
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "full", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": resource.MustParse("0")}}}
	_, err = c.clientset.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{})
	require.NoError(t, err)
	// The API server enforces a quota once its admission cache has it, a moment after it is created: wait
	// until a ConfigMap is refused before relying on it.
	require.Eventually(t, func() bool {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "quota-probe", Namespace: ns}}
		_, err := c.clientset.CoreV1().ConfigMaps(ns).Create(ctx, probe, metav1.CreateOptions{})
		if err == nil {
			_ = c.clientset.CoreV1().ConfigMaps(ns).Delete(ctx, probe.Name, metav1.DeleteOptions{})
			return false
		}
		return apierrors.IsForbidden(err)
	}, time.Minute, 100*time.Millisecond, "the quota is enforced")

	_, err = c.Rollback(ctx, RollbackRequest{Namespace: ns, Name: "app", MaxHistory: 5})
	require.Error(t, err)
	require.Contains(t, err.Error(), "app-config")
	hist, err := c.History(ctx, ns, "app")
	require.NoError(t, err)
	require.Len(t, hist, 1, "the failed attempt is not kept")
	require.Equal(t, "deployed", hist[0].Status)

	_, err = c.Rollback(ctx, RollbackRequest{Namespace: ns, Name: "app", MaxHistory: 5, KeepFailHistory: true})
	require.Error(t, err)
	hist, err = c.History(ctx, ns, "app")
	require.NoError(t, err)
	require.Len(t, hist, 2, "keepFailHistory records the failed attempt")
	require.Equal(t, "failed", hist[1].Status)
}

func comparePatchesAndOrphans(ctx context.Context, t *testing.T, c *Client) {
	ns := "compare"
	_, err := c.Install(ctx, apply(ns, "app", nil))
	require.NoError(t, err)
	requireStates(ctx, t, c, ns, "app", map[string]string{
		"ConfigMap app-config": StateReady, "ConfigMap app-extra": StateReady, "Service app": StateReady, "Deployment app": StateReady,
	})
	patch(ctx, t, c, "deployments", ns, "app", `{"spec":{"replicas":3}}`) // as an autoscaler would
	objs, err := c.CheckRelease(ctx, ns, "app", CheckOptions{})
	require.NoError(t, err)
	require.Equal(t, StateModified, find(objs, "app").State)

	hpa := CheckOptions{ComparePatches: []fleet.ComparePatch{{APIVersion: "apps/v1", Kind: "Deployment", Name: "app",
		Operations: []fleet.Operation{{Op: "remove", Path: "/spec/replicas"}}}}}
	objs, err = c.CheckRelease(ctx, ns, "app", hpa)
	require.NoError(t, err)
	require.NotEqual(t, StateModified, find(objs, "app").State, "the replicas difference is known")

	// The next revision drops app-extra but Helm is told to keep it: it is left over, not desired.
	patch(ctx, t, c, "configmaps", ns, "app-extra", `{"metadata":{"annotations":{"helm.sh/resource-policy":"keep"}}}`)
	slim := apply(ns, "app", nil)
	slim.Values = map[string]any{"extra": false}
	_, err = c.Upgrade(ctx, slim)
	require.NoError(t, err)
	objs, err = c.CheckRelease(ctx, ns, "app", hpa)
	require.NoError(t, err)
	require.Equal(t, StateOrphaned, find(objs, "app-extra").State)
	require.Equal(t, "ConfigMap app-extra: left over from revision 1", find(objs, "app-extra").Message)
}

func uninstallKeepingResources(ctx context.Context, t *testing.T, c *Client) {
	ns := "uninstall"
	_, err := c.Install(ctx, apply(ns, "kept", nil))
	require.NoError(t, err)
	_, err = c.Upgrade(ctx, apply(ns, "kept", nil))
	require.NoError(t, err)
	_, err = c.Install(ctx, apply(ns, "gone", nil))
	require.NoError(t, err)

	require.NoError(t, c.Uninstall(ctx, ns, "kept", true))
	configMap(ctx, t, c, ns, "kept-config") // still there
	secrets, err := c.clientset.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=kept"})
	require.NoError(t, err)
	require.Empty(t, secrets.Items, "every revision's record is deleted")
	st, err := c.Observe(ctx, ns, "kept")
	require.NoError(t, err)
	require.False(t, st.Exists)

	require.NoError(t, c.Uninstall(ctx, ns, "gone", false))
	_, err = c.clientset.CoreV1().ConfigMaps(ns).Get(ctx, "gone-config", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "a plain uninstall deletes the objects")

	require.NoError(t, c.Uninstall(ctx, ns, "gone", false), "uninstalling a missing release is a no-op")
	require.NoError(t, c.Uninstall(ctx, ns, "gone", true))
}

func namespaceMetadata(ctx context.Context, t *testing.T, c *Client) {
	ns := "labelled"
	r := apply(ns, "web", nil)
	r.NamespaceLabels = map[string]string{"team": "web", "pod-security.kubernetes.io/enforce": "privileged"}
	r.NamespaceAnnotations = map[string]string{"owner": "web-team"}
	_, err := c.Install(ctx, r)
	require.NoError(t, err)
	got, err := c.clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "web", got.Labels["team"])
	require.Equal(t, "web-team", got.Annotations["owner"])
	require.NotContains(t, got.Labels, "pod-security.kubernetes.io/enforce", "a bundle cannot loosen the namespace's Pod Security")

	// Changed on the next upgrade; labels set by someone else stay.
	_, err = c.clientset.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(`{"metadata":{"labels":{"admin":"yes"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	r.NamespaceLabels = map[string]string{"team": "web-2"}
	_, err = c.Upgrade(ctx, r)
	require.NoError(t, err)
	got, err = c.clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "web-2", got.Labels["team"])
	require.Equal(t, "yes", got.Labels["admin"])
}

func listByLabel(ctx context.Context, t *testing.T, c *Client) {
	repo := map[string]string{"flotilla.dev/gitrepo": "listed"}
	for _, ns := range []string{"list-b", "list-a"} {
		_, err := c.Install(ctx, apply(ns, "one", map[string]string{"flotilla.dev/gitrepo": "listed", api.LabelDeploymentID: ns}))
		require.NoError(t, err)
	}
	_, err := c.Install(ctx, apply("list-a", "other", map[string]string{"flotilla.dev/gitrepo": "elsewhere"}))
	require.NoError(t, err)
	_, err = c.Install(ctx, apply("list-a", "moved", repo))
	require.NoError(t, err)
	_, err = c.Upgrade(ctx, apply("list-a", "moved", map[string]string{"flotilla.dev/gitrepo": "elsewhere"}))
	require.NoError(t, err)

	rels, err := c.ListReleases(ctx, repo)
	require.NoError(t, err)
	var got []string
	for _, r := range rels {
		got = append(got, fmt.Sprintf("%s/%s r%d %s %s", r.Namespace, r.Name, r.Revision, r.Status, r.DeploymentID))
	}
	require.Equal(t, []string{"list-a/one r1 deployed list-a", "list-b/one r1 deployed list-b"}, got,
		"only releases whose latest revision carries the label")

	all, err := c.ListReleases(ctx, nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(all), 4)
}

func rejectedObjectsAreInvalid(ctx context.Context, t *testing.T, c *Client) {
	ns := "invalid"
	_, err := c.Install(ctx, ApplyRequest{Name: "badname", Namespace: ns, CreateNamespace: true, Chart: chartWith(`apiVersion: v1
kind: ConfigMap
metadata: {name: Not_A_Valid_Name}
`)})
	require.Error(t, err)
	t.Logf("invalid name: %v", err)
	require.True(t, IsInvalid(err), "%v", err)
	require.False(t, IsUnreachable(err), "%v", err)

	_, err = c.Install(ctx, ApplyRequest{Name: "unknownkind", Namespace: ns, CreateNamespace: true, Chart: chartWith(`apiVersion: widgets.example.com/v1
kind: Widget
metadata: {name: w}
`)})
	require.Error(t, err)
	t.Logf("unknown kind: %v", err)
	require.True(t, IsInvalid(err), "%v", err)

	_, err = c.Install(ctx, apply(ns, "immutable", nil))
	require.NoError(t, err)
	bad := apply(ns, "immutable", nil)
	bad.Chart = chartWith(`apiVersion: apps/v1
kind: Deployment
metadata: {name: immutable}
spec:
  selector: {matchLabels: {app: changed}}
  template:
    metadata: {labels: {app: changed}}
    spec: {containers: [{name: web, image: registry.invalid/web:1}]}
`)
	_, err = c.Upgrade(ctx, bad)
	require.Error(t, err)
	t.Logf("immutable field: %v", err)
	require.True(t, IsInvalid(err), "%v", err)
	require.ErrorContains(t, err, "field is immutable")
}

func concurrentUpgrades(ctx context.Context, t *testing.T, c *Client) {
	ns := "concurrent"
	_, err := c.Install(ctx, apply(ns, "busy", nil))
	require.NoError(t, err)
	var wg sync.WaitGroup
	revisions := make([]int, 4)
	errs := make([]error, 4)
	for i := range revisions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Upgrade(ctx, apply(ns, "busy", map[string]string{api.LabelDeploymentID: fmt.Sprint(i)}))
			revisions[i], errs[i] = r.Revision, err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err, "no upgrade sees another one in progress")
	}
	require.ElementsMatch(t, []int{2, 3, 4, 5}, revisions)
}

func cancelledInstall(ctx context.Context, t *testing.T, c *Client) {
	ns := "cancel"
	req := apply(ns, "slow", nil)
	// Pods that can never be scheduled: Helm's wait runs for the whole Timeout, then fails the release.
	req.Values = map[string]any{"nodeSelector": map[string]any{"pool": "none"}}
	// The install's own timeout is far longer than the caller's, so "at once" holds on a loaded machine too.
	req.Wait, req.Timeout = true, 10*time.Second
	start := time.Now()
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err := c.Install(short, req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 8*time.Second, "the caller gets its error before the install ends")

	require.NoError(t, c.DiscardPending(ctx, ns, "slow"))
	require.GreaterOrEqual(t, time.Since(start), 10*time.Second, "DiscardPending waited for the install to finish")
	st, err := c.Observe(ctx, ns, "slow")
	require.NoError(t, err)
	require.True(t, st.Exists, "the release was never pending when DiscardPending looked, or it would be gone")
	require.Equal(t, "failed", st.Status)
}

func configMap(ctx context.Context, t *testing.T, c *Client, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.clientset.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return cm
}

func patch(ctx context.Context, t *testing.T, c *Client, resource, ns, name, body string) {
	t.Helper()
	rc := c.clientset.CoreV1().RESTClient()
	if resource == "deployments" {
		rc = c.clientset.AppsV1().RESTClient()
	}
	err := rc.Patch(types.StrategicMergePatchType).Namespace(ns).Resource(resource).Name(name).Body([]byte(body)).Do(ctx).Error()
	require.NoError(t, err)
}

func states(objs []ObjectStatus) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		out[o.Ref.Kind+" "+o.Ref.Name] = o.State
	}
	return out
}

func find(objs []ObjectStatus, name string) ObjectStatus {
	for _, o := range objs {
		if o.Ref.Name == name {
			return o
		}
	}
	return ObjectStatus{}
}

func requireStates(ctx context.Context, t *testing.T, c *Client, ns, name string, want map[string]string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		objs, err := c.CheckRelease(ctx, ns, name, CheckOptions{})
		require.NoError(ct, err)
		require.Equal(ct, want, states(objs), "%v", objs)
	}, 90*time.Second, 250*time.Millisecond)
}

func readValues(ctx context.Context, t *testing.T, c *Client) {
	ns := "values-from"
	_, err := c.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cm, err := c.clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Data: map[string]string{"values.yaml": "color: blue\n"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	sec, err := c.clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data: map[string][]byte{"creds.yaml": []byte("password: hunter22\n")}}, metav1.CreateOptions{})
	require.NoError(t, err)

	data, uid, err := c.ReadValues(ctx, ValuesKey{Namespace: ns, Name: "web", Key: "values.yaml"})
	require.NoError(t, err)
	require.Equal(t, "color: blue\n", string(data))
	require.Equal(t, string(cm.UID), uid)
	data, uid, err = c.ReadValues(ctx, ValuesKey{Secret: true, Namespace: ns, Name: "creds", Key: "creds.yaml"})
	require.NoError(t, err)
	require.Equal(t, "password: hunter22\n", string(data))
	require.Equal(t, string(sec.UID), uid)

	for _, k := range []ValuesKey{
		{Namespace: ns, Name: "missing", Key: "values.yaml"},
		{Secret: true, Namespace: ns, Name: "web", Key: "values.yaml"}, // a ConfigMap of that name is no Secret
		{Secret: true, Namespace: ns, Name: "creds", Key: "values.yaml"},
		{Namespace: ns, Name: "web", Key: "other.yaml"},
	} {
		_, _, err := c.ReadValues(ctx, k)
		require.ErrorIs(t, err, ErrValuesNotFound, "%+v", k)
		require.False(t, IsUnreachable(err))
		require.NotContains(t, err.Error(), "hunter22")
	}
}
