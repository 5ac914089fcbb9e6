package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// One installation's CLI reads, with the same flag and variable as its worker, the task queue that sets
// the installation apart; with neither it is Flotilla's own queue.
func TestTheCLIUsesTheTaskQueueOfItsFlagOrEnvironment(t *testing.T) {
	queue := func(args ...string) string {
		root := newRoot()
		require.NoError(t, root.ParseFlags(args))
		return root.PersistentFlags().Lookup("task-queue").Value.String()
	}
	t.Setenv("FLOTILLA_TASK_QUEUE", "")
	require.Equal(t, "flotilla", queue())
	t.Setenv("FLOTILLA_TASK_QUEUE", "flotilla-staging")
	require.Equal(t, "flotilla-staging", queue())
	require.Equal(t, "flotilla-prod", queue("--task-queue", "flotilla-prod"), "the flag wins over the environment")
}

// A name that would break workflow IDs or visibility queries stops every command before it connects.
func TestTheCLIRefusesATaskQueueNameThatWouldBreakIDsOrQueries(t *testing.T) {
	t.Setenv("FLOTILLA_TASK_QUEUE", "team a")
	_, _, err := flotilla(t, "--address", "127.0.0.1:1", "get", "gitrepos")
	require.EqualError(t, err, `--task-queue (or FLOTILLA_TASK_QUEUE): task queue "team a": " " is not allowed (letters, digits, '.', '_' and '-' are)`)
}
