package agentclient

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func dryRunAndDiff(ctx context.Context, t *testing.T, c *Client) {
	const ns = "diffed"
	v1 := chartWith("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels: {tier: front}\ndata:\n  a: \"1\"\n  b: \"2\"\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gone\n  annotations: {}\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  annotations: {helm.sh/resource-policy: keep}\n")
	_, err := c.Install(ctx, ApplyRequest{Name: "app", Namespace: ns, Chart: v1, CreateNamespace: true})
	require.NoError(t, err)

	changes, err := c.DiffRelease(ctx, ns, "app", "", CheckOptions{})
	require.NoError(t, err)
	require.Empty(t, changes, "what runs is what the release holds")

	v2 := chartWith("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  a: \"{{ .Values.a }}\"\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new\n")
	manifest, err := c.DryRun(ctx, ApplyRequest{Name: "app", Namespace: ns, Chart: v2, Values: map[string]any{"a": "3"}}, true)
	require.NoError(t, err)
	require.Contains(t, manifest, "name: new")
	changes, err = c.DiffRelease(ctx, ns, "app", manifest, CheckOptions{})
	require.NoError(t, err)
	require.Equal(t, []ObjectChange{
		{Ref: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "app"}, Change: ChangeUpdate, Fields: []FieldChange{
			{Path: "data.a", Desired: "3", Live: "1"}, {Path: "data.b", Live: "2"}, {Path: "metadata.labels.tier", Live: "front"}}},
		{Ref: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "gone"}, Change: ChangeDelete},
		{Ref: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "new"}, Change: ChangeCreate},
	}, changes, "kept is left alone, as helm.sh/resource-policy: keep asks")

	st, err := c.Observe(ctx, ns, "app")
	require.NoError(t, err)
	require.Equal(t, 1, st.Revision, "a dry run writes no revision")
	_, err = c.clientset.CoreV1().ConfigMaps(ns).Get(ctx, "new", metav1.GetOptions{})
	require.Error(t, err, "nor any object")

	// No release yet: an install's dry run, into a namespace that does not exist yet either.
	manifest, err = c.DryRun(ctx, ApplyRequest{Name: "fresh", Namespace: "diffed-new", Chart: v2, Values: map[string]any{"a": "1"}, CreateNamespace: true}, false)
	require.NoError(t, err)
	changes, err = c.DiffRelease(ctx, "diffed-new", "fresh", manifest, CheckOptions{})
	require.NoError(t, err)
	require.Equal(t, []ObjectChange{
		{Ref: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "diffed-new", Name: "app"}, Change: ChangeCreate},
		{Ref: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "diffed-new", Name: "new"}, Change: ChangeCreate},
	}, changes)
	_, err = c.clientset.CoreV1().Namespaces().Get(ctx, "diffed-new", metav1.GetOptions{})
	require.Error(t, err, "the dry run created no namespace")

	// Drift: the release's own manifest again, as a repair would apply it.
	cm, err := c.clientset.CoreV1().ConfigMaps(ns).Get(ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["a"] = "by-hand"
	_, err = c.clientset.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, c.clientset.CoreV1().ConfigMaps(ns).Delete(ctx, "gone", metav1.DeleteOptions{}))
	changes, err = c.DiffRelease(ctx, ns, "app", "", CheckOptions{})
	require.NoError(t, err)
	require.Equal(t, []ObjectChange{
		{Ref: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "app"}, Change: ChangeUpdate, Fields: []FieldChange{{Path: "data.a", Desired: "1", Live: "by-hand"}}},
		{Ref: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "gone"}, Change: ChangeCreate},
	}, changes)
}
