package api

import "fmt"

// DefaultTaskQueue is the task queue of an installation that names none (--task-queue,
// FLOTILLA_TASK_QUEUE). A task queue is what sets one Flotilla installation apart from another on a shared
// Temporal namespace (ADR 13): its worker polls it, and everything its processes start runs on it.
const DefaultTaskQueue = "flotilla"

// Workflow types, as the worker registers them.
const (
	GitRepoWorkflowType   = "GitRepoWorkflow"
	ClusterWorkflowType   = "ClusterWorkflow"
	InventoryWorkflowType = "InventoryWorkflow"
)

// CheckTaskQueue accepts a task queue name of letters, digits, '.', '_' and '-'. The name goes into workflow
// IDs and, quoted, into visibility queries (RunningGitReposQuery), so a slash or a quote is refused rather
// than escaped.
func CheckTaskQueue(q string) error {
	if q == "" {
		return fmt.Errorf("task queue is empty")
	}
	for _, r := range q {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("task queue %q: %q is not allowed (letters, digits, '.', '_' and '-' are)", q, string(r))
		}
	}
	return nil
}

// InventoryWorkflowID is the inventory workflow of the installation on taskQueue: flotilla/inventory for
// the default queue, as before installations could share a namespace, and flotilla/inventory/<queue> for
// any other, which no GitRepo's ID and no other installation's inventory can take.
func InventoryWorkflowID(taskQueue string) string {
	if taskQueue == DefaultTaskQueue {
		return "flotilla/inventory"
	}
	return "flotilla/inventory/" + taskQueue
}

// GitRepoWorkflowID is the workflow ID of the fleet-default GitRepo name (GitRepoKey.WorkflowID for any
// namespace). It is the same in every installation: GitRepo names are unique in a Temporal namespace, and
// the CLI refuses a name another installation runs (ADR 13).
func GitRepoWorkflowID(name string) string { return KeyOf("", name).WorkflowID() }

// ClusterWorkflowID is the workflow ID of a fleet-default GitRepo's workflow on one cluster
// (GitRepoKey.ClusterWorkflowID for any namespace).
func ClusterWorkflowID(gitRepo, cluster string) string {
	return KeyOf("", gitRepo).ClusterWorkflowID(cluster)
}

// GitRepo workflow messages. The CLI, the webhook, the Web UI and `temporal workflow signal/query/update`
// use them.
const (
	// QueryStatus answers a GitRepoStatus (a ClusterStatus from a cluster workflow).
	QueryStatus = "status"
	// QueryTarget answers the ClusterTarget a cluster workflow holds now: the desired state a worker serves
	// that cluster's agent packages of, whatever an agent's request says.
	QueryTarget = "target"
	// QuerySpec answers the fleet.GitRepo the workflow runs with. It holds no credentials: spec.repo may
	// not carry a password and clientSecretName only names credentials that stay on the worker.
	QuerySpec = "spec"

	SignalSync   = "sync"   // poll now (payload: none, or a SyncRequest)
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

	// The rollout's steering wheel (RolloutActionInput, RolloutActionResult), for a GitRepo with a
	// rolloutStrategy: let it past the partition whose gate waits for approval; stop handing anything
	// over where it stands; go on; give up the commit being rolled out (until a new commit).
	UpdateRolloutApprove = "rolloutApprove"
	UpdateRolloutPause   = "rolloutPause"
	UpdateRolloutResume  = "rolloutResume"
	UpdateRolloutAbort   = "rolloutAbort"
	// UpdateOverrideWindow lets the planned commit through the GitRepo's sync windows, until a new commit
	// (RolloutActionInput: by, reason), for an emergency; it is recorded.
	UpdateOverrideWindow = "overrideWindow"
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
	UpdateAddCluster    = "addCluster"
	UpdateRemoveCluster = "removeCluster"
	// UpdateLeaveCluster takes a registered cluster out of every GitRepo, which uninstall from it (or only
	// forget it), and keeps it registered until nothing holds it there: then the inventory forgets it (ADR 16,
	// ADR 29; awaitClusterRemoved waits for that). removeCluster forgets a cluster outright.
	UpdateLeaveCluster       = "leaveCluster"
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
