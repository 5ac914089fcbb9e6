package api

import (
	"encoding/json"
	"time"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// The workflows' own inputs and signal payloads. They live here, with every other payload, so that what
// starts or signals a workflow (the CLI, the webhook, the benchmark, a user's own program) links the
// contract and not the workflow code. What a run hands its next run (the carry) is the workflows' private
// state: the contract holds it as opaque JSON, which only the workflow that wrote it reads.

// DefaultRolloutWindow is how many clusters may be applying a new desired state at once when a GitRepo
// does not say (RunOptions.RolloutWindow).
const DefaultRolloutWindow = 200

// GitRepoTaskTimeout is the workflow task timeout a GitRepo (or HelmOp) runs with when `flotilla apply`
// starts it, and after every continue-as-new whoever started it (Temporal's default is 10 s): a task that
// must replay a run of thousands of clusters, or pack their carried state, has room on a loaded machine.
const GitRepoTaskTimeout = time.Minute

// GitRepoInput is the input of GitRepoWorkflow: a Fleet GitRepo document as JSON, e.g.
// {"metadata":{"name":"example"},"spec":{"repo":"https://…","branch":"main","paths":["apps"]}}.
type GitRepoInput struct {
	fleet.GitRepo
	// Flotilla tunes the orchestration; all fields are optional.
	Flotilla *RunOptions `json:"flotilla,omitempty"`
	// Carry is the state handed over by continue-as-new by runs before it was compressed; users never set
	// it. CarryZ is the same state compressed; a run gets one or the other.
	Carry  json.RawMessage `json:"carry,omitempty"`
	CarryZ []byte          `json:"carryZ,omitempty"`
	// Workspace is the GitRepo's namespace (Fleet's workspace) outside fleet-default, as `flotilla apply`
	// starts it; empty is fleet-default. With metadata.name it is the run's identity (GitRepoKey): its
	// workflow ID, its cluster workflows' IDs, the workspace it plans in and the owner its releases name.
	// It is not read from metadata.namespace, which GitRepos ignored before workspaces existed: a run
	// started then is fleet-default's (its ID is gitrepo/<name>) whatever namespace its YAML had, and
	// must stay so to replay and to keep its cluster workflows. Continue-as-new carries it.
	Workspace string `json:"workspace,omitempty"`
	// HelmOp, when set, is a Fleet HelmOp to run instead of GitRepo (`temporal workflow start` with a
	// HelmOp's YAML as JSON under "helmOp"): the run is the GitRepo it converts to (fleet.HelmOp.AsGitRepo),
	// which continue-as-new carries on.
	HelmOp *fleet.HelmOp `json:"helmOp,omitempty"`
}

// RunOptions are Flotilla's own knobs, beside Fleet's spec.
type RunOptions struct {
	// RolloutWindow is how many clusters may be applying a new desired state at once (DefaultRolloutWindow).
	RolloutWindow int `json:"rolloutWindow,omitempty"`
	// CheckInterval is how often each cluster re-checks its releases when idle (default 1m).
	CheckInterval string `json:"checkInterval,omitempty"`
	// ResyncInterval bounds how long a terminated cluster workflow or a missed change goes unnoticed (default 5m).
	ResyncInterval string `json:"resyncInterval,omitempty"`
}

// ClusterWorkflowInput starts the workflow that keeps one GitRepo's bundles applied and checked on one cluster.
type ClusterWorkflowInput struct {
	Target        ClusterTarget `json:"target"`
	Generation    int64         `json:"generation"`
	Paused        bool          `json:"paused,omitempty"`
	CheckInterval time.Duration `json:"checkInterval,omitempty"`
	// Carry is the state handed over by continue-as-new; a fresh start leaves it empty.
	Carry json.RawMessage `json:"carry,omitempty"`
	// Shape is the workflow code a run was started for (set by the current GitRepo and by continue-as-new).
	// Zero is a run started before the field existed, which asks GetVersion instead.
	Shape int `json:"shape,omitempty"`
	// Remove is the removal a run continues: one whose uninstall kept failing for long enough to cut its
	// history goes on removing in a new run.
	Remove *RemoveRequest `json:"remove,omitempty"`
	// SyncWindows are the GitRepo's sync windows that apply to this cluster: while they are closed the run
	// applies nothing, drift correction included unless one of them allows it.
	SyncWindows []fleet.SyncWindow `json:"syncWindows,omitempty"`
}

// DesiredUpdate is the parent's `desired` signal (SignalDesired): what this cluster should run now.
type DesiredUpdate struct {
	Target        ClusterTarget `json:"target"`
	Generation    int64         `json:"generation"`
	Paused        bool          `json:"paused,omitempty"`
	CheckInterval time.Duration `json:"checkInterval,omitempty"`
	// SyncWindows are as in ClusterWorkflowInput.
	SyncWindows []fleet.SyncWindow `json:"syncWindows,omitempty"`
}

// RemoveRequest is the `remove` signal (SignalRemove) to a cluster workflow.
type RemoveRequest struct {
	KeepResources bool `json:"keepResources,omitempty"`
	// Forget ends the workflow without touching the cluster: it leaves the inventory with its workloads
	// kept (`flotilla cluster remove --keep-workloads`). A later request to forget stops an uninstall that
	// keeps failing.
	Forget bool `json:"forget,omitempty"`
	// DeleteNamespace is the GitRepo's targetNamespace, deleted after the uninstall (deleteNamespace).
	DeleteNamespace string `json:"deleteNamespace,omitempty"`
}

// ClusterReport is a child's status report to its GitRepo (SignalClusterReport), sent only when the
// status changed.
type ClusterReport struct {
	Cluster string        `json:"cluster"`
	Status  ClusterStatus `json:"status"`
	Removed bool          `json:"removed,omitempty"`
	// Removing is a report from a workflow told to remove: its uninstall has not succeeded yet, and
	// Status says why.
	Removing bool `json:"removing,omitempty"`
}

// InventoryInput starts (or continues) the inventory workflow, with the inventory plain or, past
// PackInventoryAbove, packed (InventoryZ: PackedInventory's Z).
type InventoryInput struct {
	Inventory  *inventory.Inventory `json:"inventory,omitempty"`
	InventoryZ []byte               `json:"inventoryZ,omitempty"`
}
