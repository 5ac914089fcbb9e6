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
