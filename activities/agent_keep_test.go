package activities

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/agentmanifest"
)

// The manifest the operator applies names as its owner the release KeepAgent keeps; were they two names,
// adoption would rewrite every object's ownership, and the Deployment's generation with it.
func TestTheKeptReleaseIsTheOneTheManifestNames(t *testing.T) {
	require.Equal(t, agentmanifest.ReleaseName, api.AgentReleaseName)
}

// The manifests reach Helm as they are, even where they hold what reads as a template action.
func TestTheAgentChartPrintsItsManifestsUntemplated(t *testing.T) {
	c := agentChart("kind: ConfigMap\ndata:\n  x: '{{ .Release.Name }}'\n")
	require.Equal(t, `{{ .Files.Get "agent.yaml" }}`, string(c.Templates[0].Data))
	require.Equal(t, "kind: ConfigMap\ndata:\n  x: '{{ .Release.Name }}'\n", string(c.Files[0].Data))
	require.NoError(t, c.Validate())
}
