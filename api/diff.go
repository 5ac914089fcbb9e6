package api

// Diff: what the next apply would change on each cluster, object by object, against live state (ADR 33).
// `flotilla diff` asks the GitRepo workflow for the targets (UpdateDiff: the desired state its clusters get
// next, or a commit's), then runs DiffWorkflow on them, which asks each cluster (ActivityDiff, on the
// cluster's agent for a pull-mode cluster). Nothing is applied.

// UpdateDiff returns the cluster targets a diff compares with live state (DiffInput, DiffTargets).
const UpdateDiff = "diff"

// DiffWorkflowType is the short workflow that diffs targets cluster by cluster (DiffWorkflowInput,
// DiffResult).
const DiffWorkflowType = "DiffWorkflow"

// ActivityDiff diffs one cluster's target with what runs there (DiffClusterInput, ClusterDiff).
const ActivityDiff = "Diff"

// QueryDiffTarget is the GitRepo workflow's query for the target its last diff of another commit planned
// for a cluster (DiffTargetInput, ClusterTarget): a pull-mode cluster's agent may read that target's
// packages, as it reads those of the desired state its cluster workflow holds.
const QueryDiffTarget = "diffTarget"

// DiffTargetInput is QueryDiffTarget's input.
type DiffTargetInput struct {
	Cluster string `json:"cluster"`
}

// DiffPageSize is the most clusters UpdateDiff returns at once; DiffTargets.Next continues.
const DiffPageSize = 50

// DiffInput is the input of UpdateDiff.
type DiffInput struct {
	// Cluster is the one cluster to diff; empty: every cluster of the GitRepo.
	Cluster string `json:"cluster,omitempty"`
	// Commit is a full commit to diff instead of what the clusters get next; it is planned as a rollback
	// to it would be.
	Commit string `json:"commit,omitempty"`
	// After continues a listing: only clusters whose names sort after it (DiffTargets.Next).
	After string `json:"after,omitempty"`
}

// DiffTargets is the result of UpdateDiff.
type DiffTargets struct {
	// Commit is the commit diffed: DiffInput.Commit, or the GitRepo's (a pinned cluster's target names
	// its own).
	Commit string `json:"commit"`
	// TaskQueue is where the GitRepo's workflows run: DiffWorkflow is started there.
	TaskQueue string       `json:"taskQueue"`
	Targets   []DiffTarget `json:"targets"`
	// Paused: the GitRepo is paused, and nothing is applied until it is resumed.
	Paused bool `json:"paused,omitempty"`
	// Next is the last cluster of this page when more follow: pass it as DiffInput.After.
	Next string `json:"next,omitempty"`
}

// DiffTarget is one cluster's desired state, as its cluster workflow would get it.
type DiffTarget struct {
	Target     ClusterTarget `json:"target"`
	Generation int64         `json:"generation"`
}

// DiffWorkflowInput is DiffWorkflow's input.
type DiffWorkflowInput struct {
	GitRepo string       `json:"gitRepo"`
	Commit  string       `json:"commit"`
	Targets []DiffTarget `json:"targets"`
}

// DiffResult is DiffWorkflow's result: one entry per target, in the targets' order.
type DiffResult struct {
	Commit   string        `json:"commit"`
	Clusters []ClusterDiff `json:"clusters"`
}

// DiffClusterInput is ActivityDiff's input; Prepared, Generation and Grant as in ObserveInput, for a
// pull-mode cluster's agent.
type DiffClusterInput struct {
	Target     ClusterTarget    `json:"target"`
	Prepared   []PreparedBundle `json:"prepared,omitempty"`
	Generation int64            `json:"generation,omitempty"`
	Grant      string           `json:"grant,omitempty"`
}

// ClusterDiff is what the next apply would change on one cluster.
type ClusterDiff struct {
	Cluster string       `json:"cluster"`
	Commit  string       `json:"commit"`
	Bundles []BundleDiff `json:"bundles,omitempty"`
	// Error says why the cluster could not be diffed (unreachable, agent offline); its bundles are then
	// unknown.
	Error string `json:"error,omitempty"`
}

// Changed reports whether anything on the cluster differs from what it would run.
func (c ClusterDiff) Changed() bool {
	for _, b := range c.Bundles {
		if b.Changed() {
			return true
		}
	}
	return false
}

// Failed reports whether the cluster, or one of its bundles, could not be diffed.
func (c ClusterDiff) Failed() bool {
	if c.Error != "" {
		return true
	}
	for _, b := range c.Bundles {
		if b.Error != "" {
			return true
		}
	}
	return false
}

// Diff actions: what the next apply does to a bundle's release.
const (
	DiffNone      = "none"      // no revision
	DiffInstall   = "install"   // revision 1
	DiffUpgrade   = "upgrade"   // a new revision with the new desired state
	DiffRepair    = "repair"    // drift correction: a new revision re-applying the current one
	DiffUninstall = "uninstall" // the bundle is gone from the target: the release is removed
)

// BundleDiff is one bundle's release on a cluster: the action the next apply takes and the objects it
// changes. A bundle with action none and objects listed has drifted and is left so (Reason says why).
type BundleDiff struct {
	Bundle    string `json:"bundle"`
	Release   string `json:"release,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Action    string `json:"action"`
	// Revision is the Helm revision the action would write (0 for none and uninstall).
	Revision int `json:"revision,omitempty"`
	// Reason says why the action is what it is ("deployment ID changed", "correctDrift is off", "paused").
	Reason  string       `json:"reason,omitempty"`
	Objects []ObjectDiff `json:"objects,omitempty"`
	// Error is why the bundle could not be diffed: it does not render, or Helm refuses the apply (a
	// conflict with another release's objects, a manifest the API server rejects).
	Error string `json:"error,omitempty"`
}

// Changed reports whether the bundle would get a revision or differs from live state.
func (b BundleDiff) Changed() bool {
	return b.Action != DiffNone || len(b.Objects) > 0
}

// Object changes.
const (
	ObjectCreate = "create" // desired, not live
	ObjectUpdate = "update" // live, with fields the manifest sets otherwise (Fields)
	ObjectDelete = "delete" // in the release's current manifest, not in the new one, and live
)

// ObjectDiff is one object the next apply would create, change or delete.
type ObjectDiff struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Change     string `json:"change"`
	// Fields are the changed fields of an update, by path.
	Fields []FieldDiff `json:"fields,omitempty"`
}

// FieldDiff is one field: its live value and the value the apply sets, as JSON, cut to a few hundred
// bytes; absent when the field is not set. A Secret's values are shown as "***".
type FieldDiff struct {
	Path    string `json:"path"`
	Live    string `json:"live,omitempty"`
	Desired string `json:"desired,omitempty"`
}
