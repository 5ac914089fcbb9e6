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

// The packed answer is kept between queries, and every change of the inventory is in the next one.
func TestThePackedInventoryAnswersEveryChange(t *testing.T) {
	env := inventoryEnv(t)
	packed := func() inventory.Inventory {
		v, err := env.QueryWorkflow(api.QueryInventoryPacked)
		require.NoError(t, err)
		var p api.PackedInventory
		require.NoError(t, v.Get(&p))
		inv, err := p.Unpack()
		require.NoError(t, err)
		return inv
	}
	cluster := func(name, env string) fleet.Cluster {
		return fleet.Cluster{Metadata: fleet.ObjectMeta{Name: name, Labels: map[string]string{"env": env}}, Spec: fleet.ClusterSpec{KubeConfigPath: "/k/" + name}}
	}
	var seen []inventory.Inventory
	steps := []func(){
		func() {
			update(env, api.UpdateUpsertCluster, cluster("edge-1", "prod"), func(_ any, err error) { require.NoError(t, err) })
		},
		func() {
			update(env, api.UpdateUpsertCluster, cluster("edge-2", "prod"), func(_ any, err error) { require.NoError(t, err) })
		},
		func() {
			update(env, api.UpdateUpsertCluster, cluster("edge-1", "staging"), func(_ any, err error) { require.NoError(t, err) })
		},
		func() {
			update(env, api.UpdateRemoveCluster, inventory.RemoveInput{Name: "edge-2"}, func(_ any, err error) { require.NoError(t, err) })
		},
	}
	for i, step := range steps {
		env.RegisterDelayedCallback(func() {
			step()
			env.RegisterDelayedCallback(func() {
				require.Equal(t, inventoryNow(t, env), packed(), "after step %d", i)
				require.Equal(t, packed(), packed(), "asked again after step %d", i)
				seen = append(seen, packed())
			}, time.Second)
		}, time.Duration(i+1)*time.Minute)
	}
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, time.Hour)
	env.ExecuteWorkflow(InventoryWorkflow, api.InventoryInput{})

	require.Len(t, seen, len(steps))
	require.Equal(t, []string{"edge-1"}, clusterNamesOf(seen[0]))
	require.Equal(t, []string{"edge-1", "edge-2"}, clusterNamesOf(seen[1]))
	require.Equal(t, "staging", seen[2].Clusters[0].Metadata.Labels["env"])
	require.Equal(t, []string{"edge-1"}, clusterNamesOf(seen[3]))
}
