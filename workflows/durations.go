package workflows

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"go.temporal.io/sdk/temporal"
)

// Every interval, timeout and retry policy the workflows use, in one place (as Fleet's pkg/durations).
const (
	// DefaultPollingInterval is Fleet's default for GitRepo.spec.pollingInterval.
	DefaultPollingInterval = 15 * time.Second
	// DefaultCheckInterval is how often an idle cluster workflow re-checks its releases and their objects.
	DefaultCheckInterval = time.Minute
	// DefaultResyncInterval bounds how long a lost signal, a terminated cluster workflow or an inventory
	// change missed by polling can go unnoticed: the GitRepo re-plans and re-checks its children this often.
	DefaultResyncInterval = 5 * time.Minute
	// AgentResyncInterval is how often an AgentWorkflow checks its agent's release when nothing signals it:
	// it bounds how long a release changed or deleted by hand goes unrepaired. agentRetryFirst is the first
	// retry of a failed check (an absent agent), doubling up to AgentResyncInterval.
	AgentResyncInterval = 5 * time.Minute
	agentRetryFirst     = 15 * time.Second
	// agentPresenceMin and agentPresenceMax bound how long a cluster-side activity waits for the agent to
	// pick it up before the cluster is shown Offline: an agent that polls picks a task up within
	// milliseconds, so a few seconds already mean it is gone, and an agent that stops is seen Offline at
	// most agentPresenceMax after the first check that misses it.
	agentPresenceMin = 5 * time.Second
	agentPresenceMax = 10 * time.Second
	// AckTimeout frees a rollout-window slot whose cluster has not answered, so a hung cluster holds no one hostage.
	AckTimeout = 2 * time.Minute
	// PromptCheckFirst is the first re-check after an apply; it doubles until the bundle is ready or the check interval is reached.
	PromptCheckFirst = time.Second
	// DependencyRecheck is the longest a cluster waits between checks while a bundle there waits for a
	// dependency (dependsOn) to reach an accepted state, so the bundle follows it within seconds, not a
	// check interval later (Fleet's agent requeues such a bundle every 15 s).
	DependencyRecheck = 5 * time.Second
	// RetryFirst and RetryMax bound the backoff of a cluster whose apply or observation failed.
	RetryFirst = 2 * time.Second
	RetryMax   = 5 * time.Minute

	// MaxChildStartsPerRun keeps a GitRepo run far below Temporal's 2,000 pending-children limit:
	// after this many starts the run continues as new (children are abandoned to the next run, not ended).
	MaxChildStartsPerRun = 500
	// maxRemovalsInFlight and maxRolloutWindow bound the signals a GitRepo run has waiting for the server
	// (remove signals; hand-overs, each a signal or a child start): together half of Temporal's 2,000
	// pending signals per workflow, past which the server fails the workflow's every task.
	maxRemovalsInFlight = 500
	maxRolloutWindow    = 500
	// MaxHistoryEvents continues a run as new before its history gets long, whatever the server suggests.
	MaxHistoryEvents = 10000

	// deleteTimeout is how long a deleted GitRepo waits for its clusters to confirm the uninstall before it
	// ends with RemoveIncomplete naming those left; deleteRecheck is how often it looks meanwhile.
	deleteTimeout = 30 * time.Minute
	deleteRecheck = time.Minute

	pollTimeout    = time.Minute
	planTimeout    = 10 * time.Minute
	observeTimeout = 2 * time.Minute
	applyTimeout   = 15 * time.Minute
	// heartbeat bounds how long an activity lost with a killed worker waits before it is retried elsewhere.
	heartbeat = 10 * time.Second

	// MinPollingInterval keeps a typo from turning polling into a busy loop.
	MinPollingInterval = time.Second
	// publishEvery paces the Web UI's view of a rollout in progress: the ready count moves at most this
	// often. The status query is always live, and a change of state, commit or error, or the last cluster
	// becoming Ready, is published at once.
	publishEvery = 2 * time.Second
	// minCheckDelay is the shortest wait between two checks of a cluster, whatever a backoff computes.
	minCheckDelay = 100 * time.Millisecond
	// notifyBatch gathers inventory changes made within it into one notification of the GitRepos;
	// notifyTimeout bounds that notification.
	notifyBatch   = time.Second
	notifyTimeout = time.Minute
	// leaveAskIdle and leaveAskAwaited bound one ask of what holds the leaving clusters: the activity looks
	// every second and returns once a cluster is free, so they only set how often an ask is recorded in the
	// inventory's history, more often while `flotilla cluster remove` waits for its answer. leaveAskRetry
	// spaces asks that failed.
	leaveAskIdle    = 2 * time.Minute
	leaveAskAwaited = 15 * time.Second
	leaveAskRetry   = 10 * time.Second
	// retryFirst is the first retry of a failed activity; uninstallRetryMax caps the backoff of an
	// uninstall, which is retried until it is done.
	retryFirst        = time.Second
	uninstallRetryMax = time.Minute
)

// retries is an activity retry policy of at most attempts tries.
func retries(attempts int32) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{InitialInterval: retryFirst, MaximumAttempts: attempts}
}

// retryUntilDone retries an activity for as long as its workflow waits, backing off to uninstallRetryMax.
func retryUntilDone() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{InitialInterval: retryFirst, MaximumInterval: uninstallRetryMax}
}

// spread is a number from 0 to 65535 derived from key: the jitter of a timer, the same on every replay,
// without randomness.
func spread(key string) uint16 {
	sum := sha256.Sum256([]byte(key))
	return binary.BigEndian.Uint16(sum[:2])
}

// maxClusterPassesPerRun continues a GitRepo run as new once its passes have looked at this many clusters
// in all: a replay repeats every pass, and a pass costs 1 to 10 µs a cluster (deliveries, the status view;
// the more the busier the machine), so a run replays within a few seconds whatever its size: 150 passes
// at 2,000 clusters, 30 at 10,000. A variable only so that a test can reach it without ten thousand events.
var maxClusterPassesPerRun = 300_000
