package envdefault

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An operator's variable overrides the built-in default; one exported empty (`TEMPORAL_ADDRESS= flotilla
// ...`) is as good as unset, not an empty address.
func TestAVariableSetAndNotEmptyOverridesTheDefault(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "temporal.example.com:7233")
	require.Equal(t, "temporal.example.com:7233", TemporalAddress())
	t.Setenv("TEMPORAL_ADDRESS", "")
	require.Equal(t, "127.0.0.1:7233", TemporalAddress())

	t.Setenv("TEMPORAL_NAMESPACE", "prod")
	require.Equal(t, "prod", TemporalNamespace())
	t.Setenv("TEMPORAL_NAMESPACE", "")
	require.Equal(t, "default", TemporalNamespace())

	t.Setenv("FLOTILLA_TASK_QUEUE", "flotilla-staging")
	require.Equal(t, "flotilla-staging", TaskQueue())
	t.Setenv("FLOTILLA_TASK_QUEUE", "")
	require.Equal(t, "flotilla", TaskQueue())
}
