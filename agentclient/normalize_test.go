package agentclient

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-gitops/flotilla/fleet"
)

func deployment(replicas int64, image string, conds ...map[string]any) *unstructured.Unstructured {
	c := []any{map[string]any{"type": "Available", "status": "True"}}
	for _, x := range conds {
		c = append(c, x)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "app", "generation": int64(1)},
		"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": image}},
		}}},
		"status": map[string]any{"observedGeneration": int64(1), "replicas": replicas, "updatedReplicas": replicas,
			"readyReplicas": replicas, "availableReplicas": replicas, "conditions": c},
	}}
}

var webRef = ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "app", Name: "web"}

func check(opts CheckOptions, desired, live *unstructured.Unstructured) *ObjectStatus {
	it := &checkItem{ref: webRef, desired: desired, live: live, norm: opts.forObject(webRef)}
	return evaluate(it)
}

func TestComparePatchRemoveHidesAKnownDifference(t *testing.T) {
	desired, live := deployment(2, "nginx:1"), deployment(5, "nginx:1") // an autoscaler owns replicas
	require.Equal(t, StateModified, check(CheckOptions{}, desired, live).State)

	byOperation := CheckOptions{ComparePatches: []fleet.ComparePatch{{
		APIVersion: "apps/v1", Kind: "Deployment", Namespace: "app", Name: "web",
		Operations: []fleet.Operation{{Op: "remove", Path: "/spec/replicas"}},
	}}}
	require.Equal(t, StateReady, check(byOperation, desired, live).State)

	byPointer := CheckOptions{ComparePatches: []fleet.ComparePatch{{Kind: "Deployment", Name: "web", JSONPointers: []string{"/spec/replicas"}}}}
	require.Equal(t, StateReady, check(byPointer, desired, live).State)

	require.Equal(t, int64(2), desired.Object["spec"].(map[string]any)["replicas"], "the release's objects are not changed")

	otherChange := deployment(5, "nginx:2")
	st := check(byOperation, desired, otherChange)
	require.Equal(t, StateModified, st.State, "a difference the patch does not cover is still drift")
	require.Contains(t, st.Message, "spec.template.spec.containers[name=web].image")
}

func TestComparePatchRemovesListElementsAndEscapedKeys(t *testing.T) {
	desired, live := deployment(1, "nginx:1"), deployment(1, "nginx:2")
	opts := CheckOptions{ComparePatches: []fleet.ComparePatch{{Kind: "Deployment", JSONPointers: []string{"/spec/template/spec/containers/0/image"}}}}
	require.Equal(t, StateReady, check(opts, desired, live).State)

	obj := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a/b": "x", "keep": "y"}}}
	removePointer(obj, "/metadata/annotations/a~1b")
	require.Equal(t, map[string]any{"keep": "y"}, obj["metadata"].(map[string]any)["annotations"])
	removePointer(obj, "/no/such/path")
	removePointer(obj, "not-a-pointer")
	require.Equal(t, map[string]any{"keep": "y"}, obj["metadata"].(map[string]any)["annotations"])
}

func TestComparePatchIgnoreDropsAnObjectFromMissingAndModified(t *testing.T) {
	ignore := CheckOptions{ComparePatches: []fleet.ComparePatch{{Kind: "Deployment", Name: "w.*", Operations: []fleet.Operation{{Op: "ignore"}}}}}
	require.Equal(t, StateMissing, check(CheckOptions{}, deployment(1, "a"), nil).State)
	require.Equal(t, StateReady, check(ignore, deployment(1, "a"), nil).State, "an ignored object is not missing")
	require.Equal(t, StateReady, check(ignore, deployment(1, "a"), deployment(3, "b")).State, "nor modified")

	otherName := CheckOptions{ComparePatches: []fleet.ComparePatch{{Kind: "Deployment", Name: "api", Operations: []fleet.Operation{{Op: "ignore"}}}}}
	require.Equal(t, StateMissing, check(otherName, deployment(1, "a"), nil).State)
	otherNamespace := CheckOptions{ComparePatches: []fleet.ComparePatch{{Namespace: "elsewhere", Operations: []fleet.Operation{{Op: "ignore"}}}}}
	require.Equal(t, StateMissing, check(otherNamespace, deployment(1, "a"), nil).State)
}

func TestIgnoredConditionsDoNotDecideReadiness(t *testing.T) {
	stuck := map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "timed out"}
	live := deployment(1, "a", stuck)
	require.Equal(t, StateNotReady, check(CheckOptions{}, deployment(1, "a"), live).State)

	opts := CheckOptions{IgnoreConditions: []map[string]string{{"type": "Progressing", "status": "False"}}}
	require.Equal(t, StateReady, check(opts, deployment(1, "a"), live).State)
	require.Len(t, live.Object["status"].(map[string]any)["conditions"], 2, "the live object is not changed")

	partial := CheckOptions{IgnoreConditions: []map[string]string{{"type": "Progressing", "status": "True"}}}
	require.Equal(t, StateNotReady, check(partial, deployment(1, "a"), live).State, "a rule matches only when every key matches")
}
