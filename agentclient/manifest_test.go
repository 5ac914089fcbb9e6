package agentclient

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An idle check reads the same revision again and again; its manifest is parsed once.
func TestManifestParsedOnceAndSharedAcrossChecks(t *testing.T) {
	const manifest = "---\n# Source: x/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# Source: x/b.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"
	first, err := parsedManifests.objects(manifest)
	require.NoError(t, err)
	require.Len(t, first, 2)
	again, err := parsedManifests.objects(manifest)
	require.NoError(t, err)
	require.Same(t, first[0], again[0], "the second check reuses the parsed objects")

	other, err := parsedManifests.objects(manifest + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n")
	require.NoError(t, err)
	require.Len(t, other, 3, "another revision's text is parsed on its own")
}

// A manifest that does not parse is never remembered as parsed.
func TestManifestThatDoesNotParseIsNotCached(t *testing.T) {
	_, err := parsedManifests.objects("apiVersion: v1\nkind: [\n")
	require.Error(t, err)
	_, err = parsedManifests.objects("apiVersion: v1\nkind: [\n")
	require.Error(t, err)
}
