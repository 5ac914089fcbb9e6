package agentclient

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A diff quotes both values of each field the manifest sets otherwise, with the rules drift detection
// uses: a default the API server added is no change, a quantity written another way is the same.
func TestADiffQuotesTheLiveAndTheDesiredValueOfEachChangedField(t *testing.T) {
	desired := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{
		"replicas": int64(3),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "web", "image": "nginx:1.27", "resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}}}}}}}}
	live := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{
		"replicas": int64(2), "revisionHistoryLimit": int64(10),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "web", "image": "nginx:1.25", "resources": map[string]any{"limits": map[string]any{"memory": "1024Mi"}}}}}}}}
	require.Equal(t, []FieldChange{
		{Path: "spec.replicas", Desired: int64(3), Live: int64(2)},
		{Path: "spec.template.spec.containers[name=web].image", Desired: "nginx:1.27", Live: "nginx:1.25"},
	}, driftFields(desired, live))
}

// Helm's three-way merge removes what the deployed revision set and the new manifest drops; what the old
// manifest never set (a label someone added by hand) is not the apply's to remove.
func TestFieldsTheNewManifestDropsAreRemovedButNotOnesItNeverSet(t *testing.T) {
	was := map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{"tier": "front", "app": "web"}},
		"data": map[string]any{"a": "1", "b": "2"}}
	want := map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{"app": "web"}},
		"data": map[string]any{"a": "1"}}
	live := map[string]any{"metadata": map[string]any{"name": "web", "uid": "u", "labels": map[string]any{"tier": "front", "app": "web", "owner": "ops"}},
		"data": map[string]any{"a": "1", "b": "2"}}
	require.Equal(t, []FieldChange{{Path: "data.b", Live: "2"}, {Path: "metadata.labels.tier", Live: "front"}}, droppedFields(was, want, live))
	// Already gone from live: nothing to remove.
	delete(live["data"].(map[string]any), "b")
	require.Equal(t, []FieldChange{{Path: "metadata.labels.tier", Live: "front"}}, droppedFields(was, want, live))
}
