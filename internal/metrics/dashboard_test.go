package metrics

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The dashboard must name only metrics the code registers; its temporal_ names are the SDK's, which
// this package only renames, so the end-to-end test (tests/metrics_test.go) checks those against a live
// worker's scrape.
func TestDashboardNamesRegisteredMetrics(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "grafana", "flotilla.json"))
	require.NoError(t, err)
	require.Contains(t, string(data), "${DS_PROMETHEUS}")
	names, err := DashboardMetrics(data)
	require.NoError(t, err)
	var flotilla, temporal int
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "flotilla_"):
			require.True(t, slices.Contains(Names, n), "the dashboard names %s, which is not registered", n)
			flotilla++
		case strings.HasPrefix(n, "temporal_"):
			// The adapter's spellings: counters end in _total, timers in _seconds.
			require.True(t, strings.HasSuffix(n, "_total") || strings.HasSuffix(n, "_seconds") ||
				n == "temporal_worker_task_slots_available" || n == "temporal_worker_task_slots_used" || n == "temporal_num_pollers", n)
			temporal++
		}
	}
	// Every Flotilla metric has a panel.
	require.Equal(t, len(Names), flotilla, "dashboard names %v", names)
	require.Positive(t, temporal)
}
