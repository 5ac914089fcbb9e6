package api

import (
	"time"

	"github.com/flotilla-gitops/flotilla/inventory"
)

// A cluster leaves in two steps (ADR 16), and the inventory workflow decides the second (ADR 29): while a
// cluster is leaving it asks, through ActivityLeavingHolders, which GitRepos still hold something there, and
// forgets the cluster once none does. `flotilla cluster remove` only asks (UpdateLeaveCluster) and waits
// (UpdateAwaitClusterRemoved).
const (
	// UpdateAwaitClusterRemoved waits until a leaving cluster is forgotten, or its timeout passes
	// (AwaitClusterRemovedInput → AwaitClusterRemovedResult). Its validator refuses a cluster that is
	// registered and not leaving.
	UpdateAwaitClusterRemoved = "awaitClusterRemoved"
	// QueryLeavingHolders answers what still holds each leaving cluster, as last seen ([]LeavingHolders).
	QueryLeavingHolders = "leavingHolders"
	// ActivityLeavingHolders lists what holds each leaving cluster; it returns once one of them is held by
	// nothing, or after its Within (LeavingHoldersInput → LeavingHoldersResult).
	ActivityLeavingHolders = "LeavingHolders"
)

// AwaitClusterRemovedInput names a leaving cluster and how long to wait for it to be forgotten.
type AwaitClusterRemovedInput struct {
	Name string `json:"name"`
	// Namespace is its workspace; empty is fleet-default.
	Namespace string `json:"namespace,omitempty"`
	// Timeout bounds the wait. A cluster leaving with its workloads kept needs nothing of the cluster, so at
	// the timeout it is forgotten even if a GitRepo has not let go yet (that GitRepo then finds it gone and
	// touches nothing there).
	Timeout time.Duration `json:"timeout"`
}

// AwaitClusterRemovedResult says whether the cluster is forgotten and, if something still held it, what.
type AwaitClusterRemovedResult struct {
	Removed bool `json:"removed"`
	// KeepWorkloads: it left with its Helm releases and objects kept.
	KeepWorkloads bool `json:"keepWorkloads,omitempty"`
	// Holders still held the cluster at the timeout: with Removed, a cluster forgotten with its workloads
	// kept before these GitRepos let go; without, one that stays leaving.
	Holders []Holder `json:"holders,omitempty"`
	// Error says why what holds the cluster could not be listed when it was last asked.
	Error string `json:"error,omitempty"`
}

// Holder is a GitRepo, or a cluster workflow of one, that still holds something on a leaving cluster.
type Holder struct {
	GitRepo string `json:"gitRepo"`
	Reason  string `json:"reason"`
}

// LeavingHolders is what holds one leaving cluster.
type LeavingHolders struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Generation is the inventory generation that made it leave, as the activity was asked about it.
	Generation int64    `json:"generation"`
	Holders    []Holder `json:"holders"`
	// Error says why the holders could not be listed (Holders is then what was seen before).
	Error string `json:"error,omitempty"`
}

// LeavingHoldersInput asks what holds the leaving clusters.
type LeavingHoldersInput struct {
	Clusters []inventory.Leaving `json:"clusters"`
	// Nudge lists leaving clusters (by name, in workspace Namespace) whose workflows are told to check now.
	Nudge []inventory.RemoveInput `json:"nudge,omitempty"`
	// Within bounds how long the activity waits for a cluster to be held by nothing.
	Within time.Duration `json:"within"`
}

// LeavingHoldersResult is what held each leaving cluster when the activity returned.
type LeavingHoldersResult struct {
	Clusters []LeavingHolders `json:"clusters"`
}
