package api

import "time"

// SetPollingIntervalInput is the input of UpdateSetPollingInterval.
type SetPollingIntervalInput struct {
	PollingInterval string `json:"pollingInterval"`
}

// SetPollingIntervalResult says when the repository is polled next.
type SetPollingIntervalResult struct {
	PollingInterval string    `json:"pollingInterval"`
	NextPoll        time.Time `json:"nextPoll"`
}

// ApproveRemovalInput is the input of UpdateApproveRemoval.
type ApproveRemovalInput struct {
	// Commit, when set, must be (a prefix of) the held plan's commit, so a person approves what they saw.
	Commit string `json:"commit,omitempty"`
}

// ApproveRemovalResult says what was approved.
type ApproveRemovalResult struct {
	Commit  string `json:"commit"`
	Message string `json:"message"`
}

// RolloutActionInput is the input of the rollout updates (UpdateRolloutApprove and the others).
type RolloutActionInput struct {
	// Partition, when set, must be the partition waiting for approval (approve only).
	Partition string `json:"partition,omitempty"`
	// Commit, when set, must be (a prefix of) the commit being rolled out, so a person acts on what they saw.
	Commit string `json:"commit,omitempty"`
	// By and Reason are recorded with the action (the CLI sends the user's name).
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// RolloutActionResult says what the action did and where the rollout stands.
type RolloutActionResult struct {
	Message string        `json:"message"`
	Rollout RolloutStatus `json:"rollout"`
}
