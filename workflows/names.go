// Package workflows holds Flotilla's deterministic orchestration: one GitRepoWorkflow per GitRepo fans out
// one ClusterWorkflow per targeted cluster, and InventoryWorkflow keeps the cluster inventory.
// Nothing here does I/O: every side effect is an activity.
package workflows

import (
	"go.temporal.io/sdk/temporal"
)

// TaskQueue is the queue the worker polls. It is a contract (README, CLI, `temporal workflow start`).
const TaskQueue = "flotilla"

// Workflow type names as registered with the worker.
const (
	GitRepoWorkflowType = "GitRepoWorkflow"
	ClusterWorkflowType = "ClusterWorkflow"
)

// Message names. Contracts: the CLI, the Web UI and `temporal workflow signal/query` use them.
const (
	QueryStatus = "status"

	SignalSync          = "sync"          // poll now
	SignalSpec          = "spec"          // replace the GitRepo spec (payload: fleet.GitRepo)
	SignalPause         = "pause"         // stop changes from reaching clusters
	SignalResume        = "resume"        // let them through again
	SignalDelete        = "delete"        // uninstall everywhere, then end
	SignalClusterReport = "clusterReport" // child → parent status report

	// UpdateSetPollingInterval changes how often the repository is polled, validated, from the Web UI's
	// "Send Update" or `temporal workflow update execute` (input: SetPollingIntervalInput).
	UpdateSetPollingInterval = "setPollingInterval"
	// UpdateApproveRemoval lets a held plan (one that would uninstall every bundle or most clusters) through
	// (input: ApproveRemovalInput).
	UpdateApproveRemoval = "approveRemoval"

	SignalDesired = "desired" // parent → child: new desired state
	SignalRemove  = "remove"  // parent → child: uninstall and end
	SignalCheck   = "check"   // check now
)

// GitRepoWorkflowID is the workflow ID of a GitRepo.
func GitRepoWorkflowID(name string) string { return "gitrepo/" + name }

// ClusterWorkflowID is the workflow ID of a GitRepo's workflow on one cluster.
func ClusterWorkflowID(gitRepo, cluster string) string {
	return "gitrepo/" + gitRepo + "/cluster/" + cluster
}

// Search attributes, registered on the server before first use (an unregistered one wedges the workflow task).
var (
	SearchGitRepo  = temporal.NewSearchAttributeKeyKeyword("FlotillaGitRepo")
	SearchCluster  = temporal.NewSearchAttributeKeyKeyword("FlotillaCluster")
	SearchRepo     = temporal.NewSearchAttributeKeyKeyword("FlotillaRepo")
	SearchCommit   = temporal.NewSearchAttributeKeyKeyword("FlotillaCommit")
	SearchState    = temporal.NewSearchAttributeKeyKeyword("FlotillaState")
	SearchReady    = temporal.NewSearchAttributeKeyKeyword("FlotillaReady")
	SearchHasError = temporal.NewSearchAttributeKeyBool("FlotillaHasError")
)

// SearchAttributes maps each attribute to its type, for `temporal server start-dev --search-attribute`
// and `temporal operator search-attribute create`.
var SearchAttributes = map[string]string{
	"FlotillaGitRepo":  "Keyword",
	"FlotillaCluster":  "Keyword",
	"FlotillaRepo":     "Keyword",
	"FlotillaCommit":   "Keyword",
	"FlotillaState":    "Keyword",
	"FlotillaReady":    "Keyword",
	"FlotillaHasError": "Bool",
}
