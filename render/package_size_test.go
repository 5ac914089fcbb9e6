package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// crdWithSchema is a CustomResourceDefinition whose OpenAPI schema has the given number of described
// properties, as operators' CRD bundles have.
func crdWithSchema(kind string, properties int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %ss.example.com\n", strings.ToLower(kind))
	fmt.Fprintf(&b, "spec:\n  group: example.com\n  names: {kind: %s, plural: %ss}\n  scope: Namespaced\n  versions:\n", kind, strings.ToLower(kind))
	b.WriteString("  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n")
	for i := range properties {
		fmt.Fprintf(&b, "          field%s%d:\n            type: string\n", kind, i)
		fmt.Fprintf(&b, "            description: %s field %d of the %s spec, which the controller reads when it reconciles; "+
			"see the operator's documentation, section %d.%d, for its defaults and allowed values.\n", kind, i, kind, i%17, i%7)
	}
	return b.String()
}

// A bundle of large CRDs, over Temporal's 2 MB payload limit as YAML, still packages; how large the
// package is, and how many chunks carry it, is logged. Chunks carry it whatever its size.
func TestABundleOfLargeManifestsPackages(t *testing.T) {
	files := map[string]string{"crds/fleet.yaml": "defaultNamespace: operators\n"}
	total := 0
	for _, kind := range []string{"Widget", "Gadget", "Gizmo", "Sprocket", "Flange"} {
		files["crds/"+strings.ToLower(kind)+".yaml"] = crdWithSchema(kind, 2500)
		total += len(files["crds/"+strings.ToLower(kind)+".yaml"])
	}
	require.Greater(t, total, 2<<20, "the manifests alone are over 2 MB")
	rel := rendered(t, writeRepo(t, files), "crds", fleet.ClusterInfo{Name: "c"}, "")

	data, err := rel.MarshalPackage()
	require.NoError(t, err)
	chunks := (len(data) + api.ContentChunkSize - 1) / api.ContentChunkSize
	t.Logf("%d bytes of manifests package to %d bytes (gzip), %d chunk(s) of at most %d bytes", total, len(data), chunks, api.ContentChunkSize)

	decoded, err := UnmarshalPackage(data)
	require.NoError(t, err)
	require.Len(t, decode(t, requireSameRendering(t, rel, decoded)), 5)
}
