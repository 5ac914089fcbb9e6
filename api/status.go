package api

import "time"

// Bundle, cluster and GitRepo states, with Fleet's names.
const (
	StateReady       = "Ready"
	StateNotReady    = "NotReady"
	StateModified    = "Modified"
	StateOutOfSync   = "OutOfSync"
	StateWaitApplied = "WaitApplied"
	StateErrApplied  = "ErrApplied"
	StatePending     = "Pending"
	// StateOffline is a cluster whose agent has stopped polling its task queue (pull mode): what it runs
	// is unknown since it was last seen.
	StateOffline = "Offline"
)

// stateRank is Fleet's StateRank (its API types): the state a summary over bundles, clusters or a
// GitRepo shows is the highest-ranked of its parts. Dashboards and alerts on FlotillaState are written
// against this order, so it is Fleet's to the letter: a modified object outranks a rollout that has not
// reached a cluster (OutOfSync, Pending), and both outrank objects that are not ready yet.
var stateRank = map[string]int{
	StateErrApplied:  7,
	StateWaitApplied: 6,
	StateModified:    5,
	StateOutOfSync:   4,
	StatePending:     3,
	StateNotReady:    2,
	StateReady:       1,
}

// Worse reports whether state a ranks above b (see stateRank).
func Worse(a, b string) bool { return rank(a) > rank(b) }

// rank is a state's place in stateRank. Offline, a cluster's state and never a bundle's (Fleet has no
// such bundle state), ranks with ErrApplied: what runs there is unknown, and nothing is applied.
func rank(s string) int {
	if s == StateOffline {
		return stateRank[StateErrApplied]
	}
	return stateRank[s]
}

// Staged is the state of one deployment whose newer desired state is staged but not handed over (its
// GitRepo or cluster is paused, or the rollout has not reached it), given the state of what it runs.
// Fleet judges one deployment in a fixed order, not by rank (summary.GetDeploymentState): ErrApplied,
// WaitApplied, NotReady, then OutOfSync, before Modified and Ready. So what failed, is being applied or is
// not ready yet keeps its state; anything else is OutOfSync.
func Staged(state string) string {
	switch state {
	case StateErrApplied, StateWaitApplied, StateNotReady:
		return state
	}
	return StateOutOfSync
}

// GitRepoStatus is what a GitRepo workflow's QueryStatus answers and `flotilla status -o json` prints.
// JSON names are a contract.
type GitRepoStatus struct {
	Name     string `json:"name"`
	Repo     string `json:"repo"`
	Branch   string `json:"branch,omitempty"`
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
	Paused   bool   `json:"paused,omitempty"`
	State    string `json:"state"`
	Message  string `json:"message"` // always present: scripts read it
	Error    string `json:"error,omitempty"`
	// Held says why the newest plan waits for approval (it would uninstall too much); the clusters keep
	// running the plan before it.
	Held string `json:"held,omitempty"`
	// Rollout is how the planned commit goes through the partitions of a rolloutStrategy; nil without one.
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// SyncWindow says where the GitRepo's sync windows stand: open, closed on how many clusters, or
	// overridden, and when the next one opens or closes; empty without windows.
	SyncWindow string `json:"syncWindow,omitempty"`
	// Pins are the rollbacks in force (`flotilla rollback`): clusters held on an earlier commit.
	Pins []Pin `json:"pins,omitempty"`
	// Events are the last steps people took on the GitRepo's rollouts (approve, pause, resume, abort,
	// rollback, clear rollback), oldest first: who, when, on which commit, and why.
	Events []RolloutEvent `json:"events,omitempty"`
	// Warnings name fleet.yaml keys of the planned commit that Flotilla does not act on.
	Warnings             []string        `json:"warnings,omitempty"`
	Summary              Summary         `json:"summary"`
	ReadyClusters        int             `json:"readyClusters"`
	DesiredReadyClusters int             `json:"desiredReadyClusters"`
	ResourceCounts       ResourceCounts  `json:"resourceCounts"`
	Bundles              []string        `json:"bundles"`
	Clusters             []ClusterStatus `json:"clusters"`
	// Partial says what this answer leaves out, and how to see it: a status too large for one answer
	// (Temporal refuses one over 2 MB) keeps its summary and counts, and drops bundle details, then clusters.
	Partial string `json:"partial,omitempty"`
	// Next is the last cluster of this answer when more follow: QueryStatusPage's After.
	Next string `json:"next,omitempty"`
	// Namespace is the GitRepo's workspace, fleet-default included.
	Namespace string `json:"namespace,omitempty"`
	// Removing are the clusters the GitRepo no longer targets and is still uninstalling from (or, for a
	// cluster leaving with its workloads kept, forgetting), with why an uninstall has not succeeded yet.
	// They count in no summary: nothing is desired there.
	Removing []ClusterStatus `json:"removing,omitempty"`
	// InventoryGeneration is the inventory generation the GitRepo read last; a cluster that started leaving
	// at or before it is no longer targeted (`flotilla cluster remove` waits for it).
	InventoryGeneration int64     `json:"inventoryGeneration,omitempty"`
	LastPolled          time.Time `json:"lastPolled,omitempty"`
	PollingInterval     string    `json:"pollingInterval,omitempty"`
	NextPoll            time.Time `json:"nextPoll,omitempty"`
}

// ClusterStatus is one cluster of a GitRepo: what a cluster workflow's QueryStatus answers and reports to
// its GitRepo.
type ClusterStatus struct {
	Name           string         `json:"name"`
	State          string         `json:"state"`
	Message        string         `json:"message"` // always present: scripts read it
	Commit         string         `json:"commit,omitempty"`
	ResourceCounts ResourceCounts `json:"resourceCounts"`
	Bundles        []BundleStatus `json:"bundles"`
	// Reachable is false when the last check could not reach the cluster; LastSeen says when it last could.
	Reachable   bool      `json:"reachable"`
	LastChecked time.Time `json:"lastChecked,omitempty"`
	LastSeen    time.Time `json:"lastSeen,omitempty"`
	// Offline is true while the cluster's agent does not poll (pull mode); State is then Offline.
	Offline bool `json:"offline,omitempty"`
	// SyncGeneration is the GitRepo's forceSyncGeneration the cluster last applied in full (Fleet's
	// syncGeneration).
	SyncGeneration int64 `json:"syncGeneration,omitempty"`
	// Generation is the desired-state generation this status describes.
	Generation int64 `json:"generation"`
}

// BundleStatus is one bundle on one cluster.
type BundleStatus struct {
	Name           string         `json:"name"`
	State          string         `json:"state"`
	Message        string         `json:"message"` // always present: scripts read it
	ResourceCounts ResourceCounts `json:"resourceCounts"`
	Release        string         `json:"release,omitempty"`
	Revision       int            `json:"revision,omitempty"`
	// ChartVersion and ChartDigest name the remote chart (helm.repo, a chart URL, oci://) this cluster
	// deploys, as the GitRepo's last poll resolved it.
	ChartVersion string `json:"chartVersion,omitempty"`
	ChartDigest  string `json:"chartDigest,omitempty"`
}

// Summary counts (bundle, cluster) pairs by state, with Fleet's names.
type Summary struct {
	DesiredReady int `json:"desiredReady"`
	Ready        int `json:"ready"`
	ErrApplied   int `json:"errApplied"`
	NotReady     int `json:"notReady"`
	WaitApplied  int `json:"waitApplied"`
	OutOfSync    int `json:"outOfSync"`
	Modified     int `json:"modified"`
	Pending      int `json:"pending"`
}

// Count adds one pair in state; every pair counts towards DesiredReady.
func (s *Summary) Count(state string) {
	s.DesiredReady++
	switch state {
	case StateReady:
		s.Ready++
	case StateErrApplied:
		s.ErrApplied++
	case StateNotReady:
		s.NotReady++
	case StateWaitApplied:
		s.WaitApplied++
	case StateOutOfSync:
		s.OutOfSync++
	case StateModified:
		s.Modified++
	case StatePending:
		s.Pending++
	}
}

// Partition states, in the order a partition goes through them.
const (
	// PartitionWaiting: an earlier partition is unavailable beyond maxUnavailablePartitions, so this one's
	// clusters keep what they run.
	PartitionWaiting = "Waiting"
	// PartitionRollingOut: some of its clusters are being handed the desired state or have not reported it
	// applied and Ready yet.
	PartitionRollingOut = "RollingOut"
	// PartitionAwaitingApproval: done, and its gate waits for `flotilla rollout approve`.
	PartitionAwaitingApproval = "AwaitingApproval"
	// PartitionSoaking: done, and its gate waits until its clusters have been Ready for its soak time.
	PartitionSoaking = "Soaking"
	// PartitionHalted: more of its clusters are unavailable than its maxUnavailable, and none of them is
	// still on its way: the rollout stands here until they are Ready or a new commit replaces this one.
	PartitionHalted = "Halted"
	// PartitionDone: every cluster runs the desired state, and no more are unavailable than it allows.
	PartitionDone = "Done"
)

// RolloutStatus is how a GitRepo's desired state goes through the partitions of its rolloutStrategy, with
// Fleet's counters (a Bundle's status.unavailable, maxUnavailable, unavailablePartitions,
// maxUnavailablePartitions, partitions).
type RolloutStatus struct {
	// Halted names the partition the rollout stands at, Halted; empty otherwise.
	Halted string `json:"halted,omitempty"`
	// Gate names the partition whose gate the rollout waits at (AwaitingApproval or Soaking).
	Gate string `json:"gate,omitempty"`
	// Paused and Aborted say who stopped the rollout, when and why (`flotilla rollout pause|abort`); an
	// abort holds for its commit only.
	Paused  *RolloutMark `json:"paused,omitempty"`
	Aborted *RolloutMark `json:"aborted,omitempty"`
	// Message says where the rollout stands, naming the halted partition's unavailable clusters.
	Message                  string            `json:"message"`
	MaxUnavailable           int               `json:"maxUnavailable"`
	Unavailable              int               `json:"unavailable"`
	MaxUnavailablePartitions int               `json:"maxUnavailablePartitions"`
	UnavailablePartitions    int               `json:"unavailablePartitions"`
	Partitions               []PartitionStatus `json:"partitions"`
}

// RolloutMark is who did something to a rollout, when, on which commit, and why.
type RolloutMark struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Commit string    `json:"commit,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// RolloutEvent is one step of a rollout a person took, or a gate that opened.
type RolloutEvent struct {
	RolloutMark
	// Action is approve, pause, resume, abort, rollback or clear rollback.
	Action    string `json:"action"`
	Partition string `json:"partition,omitempty"`
	// Cluster is the one cluster a rollback pinned or cleared; empty for all.
	Cluster string `json:"cluster,omitempty"`
}

// PartitionStatus is one partition of a rollout.
type PartitionStatus struct {
	Name           string `json:"name"`
	State          string `json:"state"`
	Count          int    `json:"count"`
	MaxUnavailable int    `json:"maxUnavailable"`
	// Unavailable counts the clusters that do not run the desired state yet or are not Ready.
	Unavailable int      `json:"unavailable"`
	Clusters    []string `json:"clusters"`
	// Approval and Soak are its gate; SoakUntil is when a Soaking partition's gate opens.
	Approval  bool          `json:"approval,omitempty"`
	Soak      time.Duration `json:"soak,omitempty"`
	SoakUntil time.Time     `json:"soakUntil,omitempty"`
	// ApprovedBy says who let the rollout past its gate.
	ApprovedBy *RolloutMark `json:"approvedBy,omitempty"`
	// UnavailableClusters are those of Clusters that count as Unavailable.
	UnavailableClusters []string `json:"unavailableClusters,omitempty"`
}

// QueryStatusPage answers the GitRepo's status with only the clusters StatusPageInput selects, each in
// full: what `flotilla status NAME --cluster X | --state S | --limit N` shows of a GitRepo whose whole
// status is too large for one answer.
const QueryStatusPage = "statusPage"

// StatusPageInput selects clusters for QueryStatusPage: by name, by state, after a name (the previous
// page's Next), at most Limit (default DefaultStatusPage, at most MaxStatusPage).
type StatusPageInput struct {
	Cluster string `json:"cluster,omitempty"`
	State   string `json:"state,omitempty"`
	After   string `json:"after,omitempty"`
	Limit   int    `json:"limit,omitempty"`
}

// Pages of QueryStatusPage.
const (
	DefaultStatusPage = 100
	MaxStatusPage     = 1000
)
