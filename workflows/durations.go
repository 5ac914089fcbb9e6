package workflows

import "time"

// Every interval and timeout the workflows use, in one place (as Fleet's pkg/durations).
const (
	// DefaultPollingInterval is Fleet's default for GitRepo.spec.pollingInterval.
	DefaultPollingInterval = 15 * time.Second
	// DefaultCheckInterval is how often an idle cluster workflow re-checks its releases and their objects.
	DefaultCheckInterval = time.Minute
	// DefaultResyncInterval bounds how long a lost signal, a terminated cluster workflow or an inventory
	// change missed by polling can go unnoticed: the GitRepo re-plans and re-checks its children this often.
	DefaultResyncInterval = 5 * time.Minute
	// DefaultRolloutWindow is how many clusters may be applying a new desired state at once.
	DefaultRolloutWindow = 200
	// AckTimeout frees a rollout-window slot whose cluster has not answered, so a hung cluster holds no one hostage.
	AckTimeout = 2 * time.Minute
	// PromptCheckFirst is the first re-check after an apply; it doubles until the bundle is ready or the check interval is reached.
	PromptCheckFirst = time.Second
	// RetryFirst and RetryMax bound the backoff of a cluster whose apply or observation failed.
	RetryFirst = 2 * time.Second
	RetryMax   = 5 * time.Minute

	// MaxChildStartsPerRun keeps a GitRepo run far below Temporal's 2,000 pending-children limit:
	// after this many starts the run continues as new (children are abandoned to the next run, not ended).
	MaxChildStartsPerRun = 500
	// MaxHistoryEvents continues a run as new before its history gets long, whatever the server suggests.
	MaxHistoryEvents = 10000

	pollTimeout    = time.Minute
	planTimeout    = 10 * time.Minute
	observeTimeout = 2 * time.Minute
	applyTimeout   = 15 * time.Minute
	// heartbeat bounds how long an activity lost with a killed worker waits before it is retried elsewhere.
	heartbeat = 10 * time.Second
)
