package api

// Search attributes Flotilla's workflows write, registered on the server before first use (an
// unregistered one wedges the workflow task). Visibility queries of the CLI, the webhook and the
// activities filter on them.
const (
	SearchAttrGitRepo  = "FlotillaGitRepo"
	SearchAttrCluster  = "FlotillaCluster"
	SearchAttrRepo     = "FlotillaRepo"
	SearchAttrCommit   = "FlotillaCommit"
	SearchAttrState    = "FlotillaState"
	SearchAttrReady    = "FlotillaReady"
	SearchAttrHasError = "FlotillaHasError"
)

// SearchAttributes maps each attribute to its type as the Temporal CLI spells it, for
// `temporal server start-dev --search-attribute` and `temporal operator search-attribute create`.
var SearchAttributes = map[string]string{
	SearchAttrGitRepo:  "Keyword",
	SearchAttrCluster:  "Keyword",
	SearchAttrRepo:     "Keyword",
	SearchAttrCommit:   "Keyword",
	SearchAttrState:    "Keyword",
	SearchAttrReady:    "Keyword",
	SearchAttrHasError: "Bool",
}

// RunningGitReposQuery is the visibility query for the running GitRepo workflows of the installation on
// taskQueue (a name CheckTaskQueue accepts): `flotilla get gitrepos` lists them with it, the webhook looks
// among them for the GitRepos of a pushed repository, and the NotifyGitRepos activity syncs each when the
// inventory changes. TaskQueue is one of Temporal's own search attributes, on every visibility store.
func RunningGitReposQuery(taskQueue string) string {
	return "WorkflowType = '" + GitRepoWorkflowType + "' AND ExecutionStatus = 'Running' AND TaskQueue = '" + taskQueue + "'"
}

// RunningClusterWorkflowsQuery is the visibility query for the running cluster workflows of a GitRepo of
// the installation on taskQueue; the GitRepo's name is a DNS label and needs no quoting.
func RunningClusterWorkflowsQuery(taskQueue, gitRepo string) string {
	return "WorkflowType = '" + ClusterWorkflowType + "' AND " + SearchAttrGitRepo + " = '" + gitRepo +
		"' AND ExecutionStatus = 'Running' AND TaskQueue = '" + taskQueue + "'"
}

// RunningWorkflowsOnClusterQuery is the visibility query for the running cluster workflows, of any GitRepo
// of the installation on taskQueue, on one cluster (a DNS label, needing no quoting): `flotilla cluster
// remove` waits until there are none.
func RunningWorkflowsOnClusterQuery(taskQueue, cluster string) string {
	return "WorkflowType = '" + ClusterWorkflowType + "' AND " + SearchAttrCluster + " = '" + cluster +
		"' AND ExecutionStatus = 'Running' AND TaskQueue = '" + taskQueue + "'"
}
