package agentclient

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A release confined to a namespace writes nothing outside it, whatever route the chart takes: hooks
// (never post-rendered), crds/ (installed before rendering), List items, and cluster-scoped kinds no fixed
// list knows. Its lookups see only its own namespace. The probe created a hook ClusterRoleBinding to
// cluster-admin and a hook Secret in kube-system this way.
func confinedReleasesStayInTheirNamespace(ctx context.Context, t *testing.T, c *Client) {
	const tenant = "tenant-a"
	confined := func(name string, ch *chart.Chart) ApplyRequest {
		return ApplyRequest{Name: name, Namespace: tenant, CreateNamespace: true, ConfineToNamespace: tenant, Chart: ch}
	}
	hook := "  annotations: {\"helm.sh/hook\": pre-install}\n"

	refused := map[string]struct {
		chart   *chart.Chart
		message string
		exists  func() error
	}{
		"hook-crb": {
			chartWith("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: probe-admin\n" + hook +
				"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n" +
				"subjects: [{kind: ServiceAccount, name: default, namespace: tenant-a}]\n"),
			`ClusterRoleBinding "probe-admin" is cluster-scoped`,
			func() error {
				_, err := c.clientset.RbacV1().ClusterRoleBindings().Get(ctx, "probe-admin", metav1.GetOptions{})
				return err
			},
		},
		"hook-secret": {
			chartWith("apiVersion: v1\nkind: Secret\nmetadata:\n  name: probe\n  namespace: kube-system\n" + hook + "stringData: {a: b}\n"),
			`Secret "probe" in namespace "kube-system"`,
			func() error {
				_, err := c.clientset.CoreV1().Secrets("kube-system").Get(ctx, "probe", metav1.GetOptions{})
				return err
			},
		},
		"flowschema": {
			chartWith("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: probe\n" +
				"spec:\n  priorityLevelConfiguration: {name: global-default}\n  matchingPrecedence: 9000\n"),
			`FlowSchema "probe" is cluster-scoped`,
			func() error {
				_, err := c.clientset.FlowcontrolV1().FlowSchemas().Get(ctx, "probe", metav1.GetOptions{})
				return err
			},
		},
		"list": {
			chartWith("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: probe, namespace: default}\n"),
			`ConfigMap "probe" in namespace "default"`,
			func() error {
				_, err := c.clientset.CoreV1().ConfigMaps("default").Get(ctx, "probe", metav1.GetOptions{})
				return err
			},
		},
		"crds": {
			withCRD(chartWith("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\n")),
			`CustomResourceDefinition "probes.example.com" is cluster-scoped`,
			func() error {
				return c.clientset.Discovery().RESTClient().Get().
					AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/probes.example.com").Do(ctx).Error()
			},
		},
	}
	for name, tc := range refused {
		_, err := c.Install(ctx, confined(name, tc.chart))
		require.ErrorContains(t, err, tc.message, name)
		require.ErrorContains(t, err, `objects must stay in namespace "tenant-a"`, name)
		require.True(t, IsInvalid(err), "%s: a confinement error is not retried: %v", name, err)
		require.True(t, apierrors.IsNotFound(tc.exists()), "%s: nothing was created outside the namespace", name)
	}

	// Lookups: the tenant's own Secret is found; another namespace's looks absent.
	_, err := c.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-b"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, ns := range []string{tenant, "tenant-b"} {
		_, err := c.clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
			StringData: map[string]string{"password": "pw-of-" + ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = c.Install(ctx, confined("lookups", chartWith(`apiVersion: v1
kind: ConfigMap
metadata: {name: seen}
data:
  own: {{ (lookup "v1" "Secret" "tenant-a" "db").data | toJson | quote }}
  other: {{ (lookup "v1" "Secret" "tenant-b" "db").data | toJson | quote }}
  all: {{ len ((lookup "v1" "Secret" "" "").items | default list) | quote }}
`)))
	require.NoError(t, err)
	seen := configMap(ctx, t, c, tenant, "seen").Data
	require.Contains(t, seen["own"], `"password"`, "a lookup inside the namespace works")
	require.Equal(t, "null", seen["other"], "another namespace's Secret is not visible")
	require.Equal(t, "0", seen["all"], "a cluster-wide list finds nothing")
}

func withCRD(c *chart.Chart) *chart.Chart {
	c.Files = append(c.Files, &chart.File{Name: "crds/probe.yaml", Data: []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: probes.example.com}
spec:
  group: example.com
  names: {kind: Probe, plural: probes}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`)})
	return c
}
