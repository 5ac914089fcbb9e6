package workflows

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// An installation of 10,000 clusters: plain, its inventory is 2.7 MB, over Temporal's 2 MB payload limit
// for the input the inventory workflow continues as new with and for the answer a GitRepo's plan reads. It
// travels packed, and both stay under half the limit.
func TestAnInventoryOfTenThousandClustersTravelsUnderHalfThePayloadLimit(t *testing.T) {
	inv := inventory.Inventory{Generation: 10000, Clusters: make([]fleet.Cluster, 0, 10000)}
	for i := 0; i < 10000; i++ {
		name := fmt.Sprintf("edge-%05d", i)
		inv.Clusters = append(inv.Clusters, fleet.Cluster{
			Metadata: fleet.ObjectMeta{Name: name, Labels: map[string]string{"env": "prod", "region": fmt.Sprintf("eu-west-%d", i%3)}},
			Spec: fleet.ClusterSpec{KubeConfigPath: "/etc/flotilla/kubeconfigs/" + name + ".yaml",
				TemplateValues: map[string]any{"fqdn": name + ".edge.example.com", "storeID": float64(i)}}})
	}
	packed, err := api.PackInventory(inv)
	require.NoError(t, err)
	const halfLimit = 1 << 20

	env := inventoryEnv(t)
	var answer []byte
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(api.QueryInventoryPacked)
		require.NoError(t, err)
		var p api.PackedInventory
		require.NoError(t, v.Get(&p))
		answer = p.Z
		env.SetContinueAsNewSuggested(true)
	}, time.Minute)
	env.ExecuteWorkflow(InventoryWorkflow, api.InventoryInput{InventoryZ: packed.Z})

	require.Less(t, len(answer), halfLimit, "the packed query's answer")
	answered, err := api.PackedInventory{Z: answer}.Unpack()
	require.NoError(t, err)
	require.Equal(t, inv, answered)

	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "the inventory continues as new: %v", env.GetWorkflowError())
	require.Less(t, len(can.Input.GetPayloads()[0].GetData()), halfLimit, "the continue-as-new input")
	var next api.InventoryInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Nil(t, next.Inventory, "carried packed, not plain")
	carried, err := next.Unpack()
	require.NoError(t, err)
	require.Equal(t, inv, *carried)
}
