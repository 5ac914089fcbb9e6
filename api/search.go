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

	// SearchAttrNamespace is the GitRepo's namespace (workspace), on GitRepo and cluster workflows alike.
	// Runs started before workspaces existed lack it until they continue as new; they are fleet-default's.
	SearchAttrNamespace = "FlotillaNamespace"

	// SearchAttrManagedBy, set when a GitRepo's workflow starts, says who owns its spec: empty for
	// `flotilla apply`, ManagedByController for a GitRepo or HelmOp object in a management cluster
	// (ADR 38). Continue-as-new carries it, and each side refuses to change the other's.
	SearchAttrManagedBy = "FlotillaManagedBy"
)

// ManagedByController is SearchAttrManagedBy's value on the GitRepos flotilla-controller started.
const ManagedByController = "flotilla-controller"

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

	SearchAttrNamespace: "Keyword",
	SearchAttrManagedBy: "Keyword",
}

// RunningGitReposQuery is the visibility query for the running GitRepo workflows of the installation on
// taskQueue (a name CheckTaskQueue accepts): `flotilla get gitrepos` lists them with it, the webhook looks
// among them for the GitRepos of a pushed repository, and the NotifyGitRepos activity syncs each when the
// inventory changes. TaskQueue is one of Temporal's own search attributes, on every visibility store.
func RunningGitReposQuery(taskQueue string) string {
	return "WorkflowType = '" + GitRepoWorkflowType + "' AND ExecutionStatus = 'Running' AND TaskQueue = '" + taskQueue + "'"
}

// RunningClusterWorkflowsQuery is the visibility query for the running cluster workflows of a GitRepo of
// the installation on taskQueue; names and namespaces are DNS labels and need no quoting. In fleet-default
// it is the query of before workspaces, which finds the cluster workflows of every GitRepo of that name,
// since those started before workspaces lack FlotillaNamespace: the caller keeps the IDs that
// ParseClusterWorkflowID gives this key. Elsewhere FlotillaNamespace narrows it, every such run having it.
func RunningClusterWorkflowsQuery(taskQueue string, key GitRepoKey) string {
	q := "WorkflowType = '" + ClusterWorkflowType + "' AND " + SearchAttrGitRepo + " = '" + key.Name + "'"
	if !key.IsDefault() {
		q += " AND " + SearchAttrNamespace + " = '" + key.Namespace + "'"
	}
	return q + " AND ExecutionStatus = 'Running' AND TaskQueue = '" + taskQueue + "'"
}

// RunningWorkflowsOnClusterQuery is the visibility query for the running cluster workflows, of any GitRepo
// of the installation on taskQueue, on one cluster of workspace ns (DNS labels, needing no quoting):
// `flotilla cluster remove` waits until there are none. In fleet-default, whose workflows may predate the
// FlotillaNamespace attribute, it finds every workspace's cluster of that name: the caller keeps those whose
// workflow ID says fleet-default (ParseClusterWorkflowID).
func RunningWorkflowsOnClusterQuery(taskQueue, ns, cluster string) string {
	q := "WorkflowType = '" + ClusterWorkflowType + "' AND " + SearchAttrCluster + " = '" + cluster + "'"
	if !KeyOf(ns, "").IsDefault() {
		q += " AND " + SearchAttrNamespace + " = '" + ns + "'"
	}
	return q + " AND ExecutionStatus = 'Running' AND TaskQueue = '" + taskQueue + "'"
}
