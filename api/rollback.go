package api

// UpdateRollback puts one cluster of a GitRepo, or all, on an earlier commit without a git revert, or
// clears that (RollbackInput, RollbackResult). A pinned cluster runs the pinned commit (drift correction
// restores it, not HEAD) and shows OutOfSync with who pinned it, until cleared.
const UpdateRollback = "rollback"

// RollbackInput is the input of UpdateRollback.
type RollbackInput struct {
	// Cluster is the cluster to pin or clear; empty: every cluster of the GitRepo.
	Cluster string `json:"cluster,omitempty"`
	// Commit is the full commit to pin to (`flotilla rollback --to` resolves a prefix, and `--revision` a
	// Helm revision, from the clusters' deployment history).
	Commit string `json:"commit,omitempty"`
	// Clear unpins instead: the cluster (or every cluster) goes back to the GitRepo's commit.
	Clear bool `json:"clear,omitempty"`
	// By and Reason are recorded with the pin.
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// RollbackResult says what the rollback did and which pins hold now.
type RollbackResult struct {
	Message string `json:"message"`
	Pins    []Pin  `json:"pins"`
}

// Pin is clusters of a GitRepo held on an earlier commit by a rollback.
type Pin struct {
	RolloutMark
	// Clusters are the pinned clusters; empty: every cluster the pinned commit targets.
	Clusters []string `json:"clusters,omitempty"`
}
