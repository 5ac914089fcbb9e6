package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// Recorded histories (tests/ with FLOTILLA_RECORD_HISTORIES=workflows/testdata) must replay against the
// current workflow code: a change that breaks determinism for running GitRepos fails here, not in production.
func TestRecordedHistoriesReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(GitRepoWorkflow)
			r.RegisterWorkflow(ClusterWorkflow)
			r.RegisterWorkflow(InventoryWorkflow)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}
