package workflows

// Every change of workflow code that alters the commands a running workflow issues is gated here, so
// histories recorded before it replay as they ran (workflows/replay_test.go replays recorded ones). One
// scheme: a change ID for workflow.GetVersion, named after what it changes; for cluster workflows, which
// are many and long-lived, a Shape number carried in the input instead (a GetVersion marker upserts a
// search attribute, a visibility write per run). Each gate says when it can go: once no run started before
// it can still be running (after an upgrade, every GitRepo has continued as new at least once: at most
// MaxHistoryEvents events or MaxChildStartsPerRun child starts; a cluster workflow at clusterMaxHistory).

// GitRepo workflow gates.
const (
	// gitRepoLoop2: the loop keeps its timer while the wake-up time stays the same and paces what it
	// publishes. Before, every pass (every batch of cluster reports) started and cancelled a timer and
	// upserted the memo and search attributes when the ready count moved: four commands a pass, a third of
	// the GitRepo's history in a 1,000-cluster rollout. Can go with the replay fixtures recorded before it.
	gitRepoLoop2 = "gitrepo-loop-2"
	// repoSearchAttributeFollowsSpec: a spec signal that changes spec.repo upserts FlotillaRepo.
	repoSearchAttributeFollowsSpec = "repo-search-attribute-follows-spec"
	// strictRepoURL: a run refuses every credential form in spec.repo (query strings, fragments,
	// scp-style passwords). A run started before, with such a URL, replays as it ran and meets the check
	// when it continues as new, where it stops with InvalidGitRepo naming the part to remove.
	strictRepoURL = "strict-repo-url"
	// gitRepoBoundSignals: a run keeps at most maxRemovalsInFlight remove signals and maxRolloutWindow
	// hand-overs waiting for the server, under Temporal's 2,000 pending signals with half as margin;
	// before, deleting a GitRepo from more than 2,000 clusters failed its every workflow task. With it, a
	// run that should continue as new hands nothing more over until its hand-overs land, a deletion sends
	// its removals 500 at a time and continues as new too, and the carry leaves out the delivery hashes the
	// next run computes again.
	gitRepoBoundSignals = "gitrepo-bound-signals"
	// gitRepoWorkBudget: a run continues as new once its passes have looked at maxClusterPassesPerRun
	// clusters in all, so that replaying it (after a worker restart or a lost cache) stays seconds long
	// at any fleet size; and the next run gets a workflow task timeout of api.GitRepoTaskTimeout. Before, a
	// run of 2,000 clusters took 9 s to replay on an idle machine, and once a task timed out under load
	// every retry replayed the whole run and timed out again.
	gitRepoWorkBudget = "gitrepo-work-budget"
)

// Inventory workflow gates.
const (
	// inventoryNotifiesGitRepos: an inventory change signals sync to every running GitRepo.
	inventoryNotifiesGitRepos = "notify-gitrepos"
	// inventoryDecidesLeave: while a cluster is leaving, the inventory asks what holds it and forgets it
	// once nothing does (ADR 29); before, only the CLI's removeCluster update forgot it. A run that replays
	// without it still decides for a cluster someone waits on (awaitClusterRemoved is newer than the gate).
	inventoryDecidesLeave = "inventory-decides-leave"
)

// Cluster workflow gates: runs started with a Shape know their behaviour from it; runs started before
// Shape existed (Shape 0) ask GetVersion with the change ID of each behaviour.
const (
	// clusterShapeLoop2 (change ID clusterLoop2): Observe runs as a local activity, and a child started
	// with its search attributes does not upsert them again.
	clusterShapeLoop2 = 2
	clusterLoop2      = "cluster-loop-2"
	// clusterShapeSweep (change ID clusterSweep): the run sweeps releases its target no longer has.
	clusterShapeSweep = 3
	clusterSweep      = "cluster-sweep"
	// clusterShapeRemoveReports (change ID clusterRemoveReports): a run told to remove retries a failing
	// uninstall itself, reporting why to its GitRepo between attempts, and a later request to forget the
	// cluster (it leaves with its workloads kept) stops it; before, one activity retried until done, silently.
	clusterShapeRemoveReports = 4
	clusterRemoveReports      = "cluster-remove-reports"
	// clusterShapeRemovalGrant (change ID clusterRemovalGrant): before an agent-mode cluster's agent
	// uninstalls, the run asks the management side to grant the removal (a local activity, ADR 26).
	// Kubeconfig-mode runs never ask, so their histories are unchanged whatever their shape.
	clusterShapeRemovalGrant = 5
	clusterRemovalGrant      = "cluster-removal-grant"

	// dependsOn needs no gate: a bundle waits, and its cluster checks within DependencyRecheck, only when
	// its target says what it depends on (api.BundleRef.DependsOn, DependsOnError), which no target had
	// before; without them every decision, status and delay is what it was
	// (TestBundlesWithoutDependsOnAreJudgedAsBefore), so recorded histories replay as they ran.

	// ClusterShapeCurrent is the Shape a run is started with, by the GitRepo and by continue-as-new.
	ClusterShapeCurrent = clusterShapeRemovalGrant
)
