package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/agentmanifest"
)

// AgentDesired reads a cluster's agent as the management side wants it (ADR 23): its effective
// configuration, made of what the operator supplied and, for the rest, the defaults and this installation's
// settings (Installation), and the objects Flotilla keeps of it. Only the digest of that configuration is
// ever compared, so a setting spelled out as its default redeploys nothing.
func (a *Activities) AgentDesired(ctx context.Context, in api.AgentDesiredInput) (api.AgentDesired, error) {
	name := fleet.DisplayName(in.Workspace, in.Cluster)
	// Read fresh, not through inventoryFor's cache: a changed setting must be seen by the check it triggers.
	inv, err := a.Inventory.Read(ctx)
	if err != nil {
		return api.AgentDesired{}, fmt.Errorf("cluster %q: reading the cluster inventory: %w", name, err)
	}
	c, ok := inv.Cluster(in.Workspace, in.Cluster)
	if !ok {
		return api.AgentDesired{Reason: fmt.Sprintf("cluster %q is not in the inventory", name)}, nil
	}
	if c.Spec.Agent == nil {
		return api.AgentDesired{Reason: fmt.Sprintf("cluster %q is not in agent mode", name)}, nil
	}
	inst := a.Installation
	if inst.TaskQueue == "" {
		inst.TaskQueue = a.TaskQueue
	}
	cfg := agentmanifest.Effective(*c.Spec.Agent, inst)
	manifests, err := agentmanifest.KeptYAML(c.Metadata.Name, fleet.Workspace(c.Metadata.Namespace), cfg)
	if err != nil {
		// The registration itself is wrong (a name or an image that cannot be); retrying changes nothing.
		return api.AgentDesired{}, temporal.NewNonRetryableApplicationError(err.Error(), api.ErrTypeInvalid, nil)
	}
	d := api.AgentDesired{Keep: true, Namespace: cfg.Namespace, Digest: agentmanifest.ConfigDigest(cfg), Manifests: string(manifests)}
	if k, ok := a.clusterKey(in.Workspace, in.Cluster); ok {
		d.Grant = k.Grant(grantAgent, agentReleaseMessage(in.Workspace, in.Cluster, d.Namespace, d.Digest, d.Manifests))
	}
	return d, nil
}
