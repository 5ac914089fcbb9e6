// Package workeropts is how a Flotilla worker is sized, shared by flotilla-worker and the benchmark's
// orchestration floor so that the floor runs the same worker configuration it is compared with.
package workeropts

import (
	"time"

	"go.temporal.io/sdk/worker"
)

// Defaults of flotilla-worker's --max-concurrent-activities, --max-concurrent-workflow-tasks and
// --workflow-cache-size.
const (
	DefaultMaxConcurrentActivities    = 200
	DefaultMaxConcurrentWorkflowTasks = 100
	// DefaultWorkflowCacheSize is how many workflows a worker keeps in memory between their tasks: one per
	// cluster of each GitRepo, and each GitRepo. The SDK's own default, 10,000, is one GitRepo of 10,000
	// clusters: their checks then push the least recently used workflows out of the cache, and the next
	// task or query of one replays it from its history. At that size the inventory workflow was seen
	// replaying in a profile, and status queries took 5 to 10 s (docs/performance.md).
	DefaultWorkflowCacheSize = 25000
)

// Options sizes a worker that runs at most maxActivities activities at once, with the default number of
// workflow tasks.
func Options(maxActivities int) worker.Options {
	return Sized(maxActivities, DefaultMaxConcurrentWorkflowTasks)
}

// Sized sizes a worker that runs at most maxActivities activities and maxWorkflowTasks workflow tasks at once.
func Sized(maxActivities, maxWorkflowTasks int) worker.Options {
	return worker.Options{
		MaxConcurrentActivityExecutionSize: maxActivities,
		// Observe runs as a local activity, in a pool of its own with the same bound as activities, so that
		// a thousand due checks do not open a thousand API calls at once.
		MaxConcurrentLocalActivityExecutionSize: maxActivities,
		MaxConcurrentWorkflowTaskExecutionSize:  maxWorkflowTasks,
		// The GitRepo workflow folds a thousand clusters' reports in one pass, a few milliseconds of CPU;
		// on two busy cores, with garbage collection assisting, a pass has taken over the SDK's default 1 s
		// and was failed as a deadlock (docs/performance.md). A real deadlock is still caught.
		DeadlockDetectionTimeout: 5 * time.Second,
	}
}
