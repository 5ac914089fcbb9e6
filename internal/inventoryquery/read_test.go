package inventoryquery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// inventoryWorkflow answers queries as an inventory workflow of some worker version would.
type inventoryWorkflow struct {
	client.Client
	answers map[string]any
	asked   []string
}

func (w *inventoryWorkflow) QueryWorkflow(_ context.Context, id, _ string, queryType string, _ ...any) (converter.EncodedValue, error) {
	w.asked = append(w.asked, queryType)
	if id != api.InventoryWorkflowID(api.DefaultTaskQueue) {
		return nil, serviceerror.NewNotFound("workflow not found for ID: " + id)
	}
	a, ok := w.answers[queryType]
	if !ok {
		// The SDK's answer to a query its workflow has no handler for.
		return nil, serviceerror.NewQueryFailed(fmt.Sprintf("unknown queryType %s. KnownQueryTypes=[__stack_trace %s]", queryType, api.QueryInventory))
	}
	if err, isErr := a.(error); isErr {
		return nil, err
	}
	b, err := json.Marshal(a)
	return jsonValue(b), err
}

type jsonValue []byte

func (v jsonValue) HasValue() bool    { return len(v) > 0 }
func (v jsonValue) Get(ptr any) error { return json.Unmarshal(v, ptr) }

func anInventory() inventory.Inventory {
	return inventory.Inventory{Generation: 7, Clusters: []fleet.Cluster{
		{Metadata: fleet.ObjectMeta{Name: "edge-1", Labels: map[string]string{"env": "prod"}}},
		{Metadata: fleet.ObjectMeta{Name: "edge-2"}},
	}}
}

func TestTheInventoryIsReadPacked(t *testing.T) {
	packed, err := api.PackInventory(anInventory())
	require.NoError(t, err)
	w := &inventoryWorkflow{answers: map[string]any{api.QueryInventoryPacked: packed, api.QueryInventory: errors.New("not to be asked")}}

	inv, err := Read(context.Background(), w, api.DefaultTaskQueue)
	require.NoError(t, err)
	require.Equal(t, anInventory(), inv)
	require.Equal(t, []string{api.QueryInventoryPacked}, w.asked)
}

func TestAnInventoryWorkflowOlderThanThePackedQueryIsAskedThePlainOne(t *testing.T) {
	w := &inventoryWorkflow{answers: map[string]any{api.QueryInventory: anInventory()}}

	inv, err := Read(context.Background(), w, api.DefaultTaskQueue)
	require.NoError(t, err)
	require.Equal(t, anInventory(), inv)
	require.Equal(t, []string{api.QueryInventoryPacked, api.QueryInventory}, w.asked)
}

func TestAnyOtherQueryFailureIsReturnedAsIs(t *testing.T) {
	w := &inventoryWorkflow{answers: map[string]any{api.QueryInventoryPacked: serviceerror.NewUnavailable("connection refused")}}

	_, err := Read(context.Background(), w, api.DefaultTaskQueue)
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, []string{api.QueryInventoryPacked}, w.asked)

	_, err = Read(context.Background(), w, "another-queue")
	require.ErrorContains(t, err, "workflow not found")
}
