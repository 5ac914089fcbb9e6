package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// valuesFromBundle is a chart bundle "web" that takes values from its cluster: the ConfigMap web-config
// (key values.yaml, the default) and the Secret web-creds (key creds.yaml), both in the release's
// namespace; its chart writes what it gets into ConfigMap "web". Bundle "plain" has no valuesFrom.
func valuesFromBundle() map[string]string {
	return map[string]string{
		"web/fleet.yaml": `name: web
helm:
  chart: ./chart
  values:
    color: red
    size: {from: values, width: 1}
  valuesFrom:
  - configMapKeyRef: {name: web-config}
    secretKeyRef: {name: web-creds, key: creds.yaml}
`,
		"web/chart/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  labels: {tier: {{ .Values.tier | default \"web\" | quote }}}\ndata:\n" +
			"  color: {{ .Values.color | quote }}\n  from: {{ .Values.size.from | quote }}\n" +
			"  width: {{ .Values.size.width | quote }}\n  password: {{ .Values.password | quote }}\n",
		"plain/fleet.yaml": "name: plain\n",
		"plain/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  ok: \"yes\"\n",
	}
}

// confinedCluster registers a cluster that is one namespace of the backing API server, as Fleet's agent
// simulators share one.
func confinedCluster(s *harness.Stack, name, backing string) {
	s.Apply(fmt.Sprintf(`apiVersion: fleet.cattle.io/v1alpha1
kind: Cluster
metadata:
  name: %s
spec:
  kubeConfigPath: %s
  confineToNamespace: %s
`, name, s.K8s.Kubeconfig(backing), name))
}

// createValuesSources creates, in namespace ns of the backing cluster, what valuesFromBundle reads.
func createValuesSources(t *testing.T, s *harness.Stack, ns, config, password string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kube := s.Kube("a")
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		require.NoError(t, err)
	}
	_, err = kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config"},
		Data: map[string]string{"values.yaml": config}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-creds"},
		Data: map[string][]byte{"creds.yaml": []byte("password: " + password + "\n")}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// helm.valuesFrom is read on each target cluster, as Fleet's agent reads it: the ConfigMap's and the
// Secret's values reach what is deployed, over the fleet.yaml's; a cluster that lacks them fails that
// bundle alone, by name, while its other bundle and the other clusters deploy, and it deploys once they
// appear; a changed Secret is redeployed at the next check. What the Secret holds never enters a workflow
// history, a status or the worker's log.
func TestValuesFromAreReadOnEachClusterAndNeverLeaveIt(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	const (
		oneSecret   = "s3cr3t-of-one-v1"
		oneSecret2  = "s3cr3t-of-one-v2"
		threeSecret = "s3cr3t-of-three"
		twoSecret   = "s3cr3t-of-two"
		badTier     = "s3cr3t tier!"
	)
	createValuesSources(t, s, "one", "color: blue\nsize: {from: configmap}\n", oneSecret)
	createValuesSources(t, s, "three", "color: green\n", threeSecret)
	for _, c := range []string{"one", "two", "three"} {
		confinedCluster(s, c, "a")
	}
	repo := s.NewRepo(valuesFromBundle())
	s.StartGitRepo(api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "vf"}, Spec: fleet.GitRepoSpec{Repo: repo.URL(), Branch: "main",
			PollingInterval: "1s", Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{}}}}},
		Flotilla: &api.RunOptions{CheckInterval: "2s"},
	})

	const missing = `bundle "web": valuesFrom configmap "two/web-config" key "values.yaml": not found`
	st := s.WaitStatus("vf", 3*time.Minute, "one and three Ready, web failing on two alone", func(st api.GitRepoStatus) bool {
		one, _ := harness.Cluster(st, "one")
		three, _ := harness.Cluster(st, "three")
		two, ok := harness.Cluster(st, "two")
		return one.State == api.StateReady && three.State == api.StateReady && ok && bundleState(two, "plain") == api.StateReady &&
			bundleState(two, "web") == api.StateErrApplied && strings.Contains(two.Message, missing)
	})
	require.Contains(t, st.Message, `cluster "two": `+missing, "the GitRepo names the cluster, the bundle and the source")

	require.Equal(t, map[string]string{"color": "blue", "from": "configmap", "width": "1", "password": oneSecret},
		s.ConfigMapData("a", "one", "web"), "the Secret over the ConfigMap over helm.values; maps merge key by key")
	require.Equal(t, map[string]string{"color": "green", "from": "values", "width": "1", "password": threeSecret},
		s.ConfigMapData("a", "three", "web"), "each cluster reads its own")
	require.Nil(t, s.ConfigMapData("a", "two", "web"))
	require.NotNil(t, s.ConfigMapData("a", "two", "plain"))
	require.Len(t, s.History("a", "one", "web"), 1)

	// A changed Secret is a new deployment, found by the next check: one upgrade, nothing else.
	kube := s.Kube("a")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sec, err := kube.CoreV1().Secrets("one").Get(ctx, "web-creds", metav1.GetOptions{})
	require.NoError(t, err)
	sec.Data["creds.yaml"] = []byte("password: " + oneSecret2 + "\n")
	_, err = kube.CoreV1().Secrets("one").Update(ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cm, err := kube.CoreV1().ConfigMaps("one").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && cm.Data["password"] == oneSecret2
	}, harness.Patience(2*time.Minute), 250*time.Millisecond, "the changed Secret is deployed")
	require.Len(t, s.History("a", "one", "web"), 2)
	require.Len(t, s.History("a", "three", "web"), 1, "the other clusters are left alone")

	// The missing sources appear: the next check deploys.
	createValuesSources(t, s, "two", "color: white\n", twoSecret)
	s.WaitStatus("vf", 2*time.Minute, "every cluster Ready", harness.AllReady)
	require.Equal(t, twoSecret, s.ConfigMapData("a", "two", "web")["password"])

	// A Secret's value the API server refuses, and quotes in its refusal: the bundle fails on that
	// cluster, and its message shows the refusal with the value redacted.
	sec, err = kube.CoreV1().Secrets("three").Get(ctx, "web-creds", metav1.GetOptions{})
	require.NoError(t, err)
	sec.Data["creds.yaml"] = []byte("password: " + threeSecret + "\ntier: " + badTier + "\n")
	_, err = kube.CoreV1().Secrets("three").Update(ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	st = s.WaitStatus("vf", 2*time.Minute, "web failing on three", func(st api.GitRepoStatus) bool {
		three, _ := harness.Cluster(st, "three")
		return bundleState(three, "web") == api.StateErrApplied && strings.Contains(three.Message, "[redacted]")
	})
	three, _ := harness.Cluster(st, "three")
	t.Logf("cluster three: %s", three.Message)

	// Only digests left the clusters' activities: no history of any workflow, no status and no line of the
	// worker's log holds what a Secret held.
	status := fmt.Sprintf("%+v", st)
	log, err := os.ReadFile(filepath.Join(s.Dir, "worker.log"))
	require.NoError(t, err)
	for _, secret := range []string{oneSecret, oneSecret2, twoSecret, threeSecret, badTier} {
		found, err := s.HistoriesContaining(secret)
		require.NoError(t, err)
		require.Empty(t, found, "workflow histories holding %q", secret)
		require.NotContains(t, status, secret)
		require.NotContains(t, string(log), secret)
	}
	found, err := s.HistoriesContaining("valuesFrom configmap")
	require.NoError(t, err)
	require.NotEmpty(t, found, "the search does find what histories hold: the error that named the missing source")
}

func bundleState(c api.ClusterStatus, bundle string) string {
	for _, b := range c.Bundles {
		if b.Name == bundle {
			return b.State
		}
	}
	return ""
}
