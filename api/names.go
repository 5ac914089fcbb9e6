package api

// TaskQueue is the queue the worker polls. README, the CLI and `temporal workflow start` use it.
const TaskQueue = "flotilla"

// Workflow types, as the worker registers them.
const (
	GitRepoWorkflowType   = "GitRepoWorkflow"
	ClusterWorkflowType   = "ClusterWorkflow"
	InventoryWorkflowType = "InventoryWorkflow"
)

// InventoryWorkflowID is the one inventory workflow of a namespace.
const InventoryWorkflowID = "flotilla/inventory"

// GitRepoWorkflowID is the workflow ID of a GitRepo.
func GitRepoWorkflowID(name string) string { return "gitrepo/" + name }

// ClusterWorkflowID is the workflow ID of a GitRepo's workflow on one cluster.
func ClusterWorkflowID(gitRepo, cluster string) string {
	return GitRepoWorkflowID(gitRepo) + "/cluster/" + cluster
}

// GitRepo workflow messages. The CLI, the webhook, the Web UI and `temporal workflow signal/query/update`
// use them.
const (
	// QueryStatus answers a GitRepoStatus (a ClusterStatus from a cluster workflow).
	QueryStatus = "status"
	// QuerySpec answers the fleet.GitRepo the workflow runs with. It holds no credentials: spec.repo may
	// not carry a password and clientSecretName only names credentials that stay on the worker.
	QuerySpec = "spec"

	SignalSync   = "sync"   // poll now
	SignalSpec   = "spec"   // replace the GitRepo spec (payload: fleet.GitRepo)
	SignalPause  = "pause"  // stop changes from reaching clusters
	SignalResume = "resume" // let them through again
	SignalDelete = "delete" // uninstall everywhere, then end
	// SignalClusterReport is a cluster workflow's status report to its GitRepo.
	SignalClusterReport = "clusterReport"

	// UpdateSetPollingInterval changes how often the repository is polled, validated, from the Web UI's
	// "Send Update" or `temporal workflow update execute` (SetPollingIntervalInput).
	UpdateSetPollingInterval = "setPollingInterval"
	// UpdateApproveRemoval lets a held plan (one that would uninstall every bundle or most clusters)
	// through (ApproveRemovalInput).
	UpdateApproveRemoval = "approveRemoval"
)

// Cluster workflow messages: its GitRepo sends the first two, a person or a test the third.
const (
	SignalDesired = "desired" // new desired state
	SignalRemove  = "remove"  // uninstall and end
	SignalCheck   = "check"   // check now
)

// Inventory workflow messages. The CLI changes clusters and groups through the updates; plans read the
// inventory through the query.
const (
	UpdateUpsertCluster = "upsertCluster"
	// UpdateAddCluster registers a new cluster and refuses to change one that exists (`flotilla cluster add`
	// without --replace): replacing labels wholesale by re-running an add can untarget GitRepos.
	UpdateAddCluster         = "addCluster"
	UpdateRemoveCluster      = "removeCluster"
	UpdateUpsertClusterGroup = "upsertClusterGroup"
	UpdateRemoveClusterGroup = "removeClusterGroup"
	QueryInventory           = "inventory"
)

// Activity names, as the worker registers them and recorded histories hold them: renaming one strands
// every workflow that scheduled it.
const (
	ActivityPoll                 = "Poll"
	ActivityPlan                 = "Plan"
	ActivityObserve              = "Observe"
	ActivityApply                = "Apply"
	ActivityUninstall            = "Uninstall"
	ActivityListClusterWorkflows = "ListClusterWorkflows"
	ActivityNotifyGitRepos       = "NotifyGitRepos"
)
