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

// RunningGitReposQuery is the visibility query for every running GitRepo workflow: `flotilla get
// gitrepos` lists them with it, the webhook looks among them for the GitRepos of a pushed repository, and
// the NotifyGitRepos activity syncs each when the inventory changes.
const RunningGitReposQuery = "WorkflowType = '" + GitRepoWorkflowType + "' AND ExecutionStatus = 'Running'"

// RunningClusterWorkflowsQuery is the visibility query for the running cluster workflows of a GitRepo,
// whose name is a DNS label and needs no quoting.
func RunningClusterWorkflowsQuery(gitRepo string) string {
	return "WorkflowType = '" + ClusterWorkflowType + "' AND " + SearchAttrGitRepo + " = '" + gitRepo + "' AND ExecutionStatus = 'Running'"
}
