// Package workflows holds Flotilla's deterministic orchestration: one GitRepoWorkflow per GitRepo fans out
// one ClusterWorkflow per targeted cluster, and InventoryWorkflow keeps the cluster inventory.
// Nothing here does I/O: every side effect is an activity, called by its name in api.
package workflows

import (
	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
)

// The search attributes of api, typed for the SDK's upserts.
var (
	searchGitRepo  = temporal.NewSearchAttributeKeyKeyword(api.SearchAttrGitRepo)
	searchCluster  = temporal.NewSearchAttributeKeyKeyword(api.SearchAttrCluster)
	searchRepo     = temporal.NewSearchAttributeKeyKeyword(api.SearchAttrRepo)
	searchCommit   = temporal.NewSearchAttributeKeyKeyword(api.SearchAttrCommit)
	searchState    = temporal.NewSearchAttributeKeyKeyword(api.SearchAttrState)
	searchReady    = temporal.NewSearchAttributeKeyKeyword(api.SearchAttrReady)
	searchHasError = temporal.NewSearchAttributeKeyBool(api.SearchAttrHasError)

	searchNamespace = temporal.NewSearchAttributeKeyKeyword(api.SearchAttrNamespace)
)
