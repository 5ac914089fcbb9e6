package workflows

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
)

// The CLI, the webhook and the benchmarks start and list workflows by the type names in api, while the
// worker registers the functions, whose names the SDK takes for their types: a function renamed alone
// would leave every start by name without a worker to run it.
func TestWorkflowFunctionsAreNamedAsTheirAPITypes(t *testing.T) {
	for want, fn := range map[string]any{
		api.GitRepoWorkflowType:   GitRepoWorkflow,
		api.ClusterWorkflowType:   ClusterWorkflow,
		api.InventoryWorkflowType: InventoryWorkflow,
	} {
		name := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
		require.Equal(t, want, name[strings.LastIndex(name, ".")+1:])
	}
}

// The worker creates the search attributes with the types api names; the workflows upsert them through
// typed keys. A key of another type than the attribute was created with fails every workflow task.
func TestTypedSearchAttributesHaveTheirAPITypes(t *testing.T) {
	keys := []temporal.SearchAttributeKey{searchGitRepo, searchCluster, searchRepo, searchCommit, searchState, searchReady, searchHasError,
		searchNamespace}
	// FlotillaManagedBy is set by whoever starts a GitRepo (gitrepoctl.Apply) and carried by continue-as-new.
	require.Equal(t, "Keyword", api.SearchAttributes[api.SearchAttrManagedBy])
	require.Len(t, api.SearchAttributes, len(keys)+1, "every other attribute api names is written by the workflows")
	for _, k := range keys {
		require.Contains(t, api.SearchAttributes, k.GetName())
		require.Equal(t, api.SearchAttributes[k.GetName()], k.GetValueType().String(), k.GetName())
	}
}
