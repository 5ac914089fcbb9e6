package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/agentkey"
	"github.com/flotilla-gitops/flotilla/internal/content"
	"github.com/flotilla-gitops/flotilla/render"
)

// LocalCluster is the one cluster a flotilla-agent runs in and applies to (pull mode, ADR 22).
type LocalCluster struct {
	// Name and Workspace are the cluster's inventory name and workspace: the agent's identity.
	Name, Workspace string
	Client          *agentclient.Client
	// Store keeps the packages fetched from the management side, by digest, so a package is fetched once
	// per agent however many checks and retries apply it.
	Store *content.Store
	// Fetch reads chunks of packages from the management side, through Temporal (ContentWorkflow): the
	// chunks' bytes, concatenated in order (sealed to Key when the agent has one).
	Fetch func(ctx context.Context, in api.ReadContentInput) ([]byte, error)
	// Key is this cluster's agent key (ADR 26): with it, the agent opens only packages sealed to it and acts
	// only on what the management side granted; zero, it trusts its task queue, as before keys.
	Key agentkey.Key

	guardOnce sync.Once
	guard     *agentGuard
}

// guarded is the agent's guard, made on first use.
func (l *LocalCluster) guarded() *agentGuard {
	l.guardOnce.Do(func() { l.guard = &agentGuard{key: l.Key} })
	return l.guard
}

// clientFor is the agent's own cluster, and refuses any other: a task for another cluster on this queue is
// a routing error, never something to apply here.
func (l *LocalCluster) clientFor(workspace, cluster string) (*agentclient.Client, error) {
	if fleet.Workspace(workspace) != fleet.Workspace(l.Workspace) || cluster != l.Name {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("this agent runs in cluster %q, not %q",
			fleet.DisplayName(l.Workspace, l.Name), fleet.DisplayName(workspace, cluster)), api.ErrTypeUnknownCluster, nil)
	}
	return l.Client, nil
}

// preparedError is a bundle that did not render on the management side, with the type Observe gives it.
type preparedError struct{ msg, typ string }

func (e *preparedError) Error() string { return e.msg }

// renderPrepared is an agent's rendering of a bundle: the management side's summary for a check, and its
// package, fetched once by digest, for an apply. The agent never reads git or a chart repository.
func (a *Activities) renderPrepared(ctx context.Context, h *clusterHandle, t api.ClusterTarget, ref api.BundleRef, forApply bool) (*render.Release, error) {
	p, ok := h.prepared[ref.Name]
	if !ok {
		return nil, fmt.Errorf("bundle %q: the management side sent no rendering of it", ref.Name)
	}
	if p.Error != "" {
		return nil, &preparedError{msg: p.Error, typ: p.ErrorType}
	}
	rel, err := render.UnmarshalSummary(p.Release)
	if err != nil {
		return nil, fmt.Errorf("bundle %q: %w", ref.Name, err)
	}
	if !forApply || !rel.Deploy {
		return rel, nil
	}
	data, err := a.Local.Store.Get(p.Package)
	if errors.Is(err, content.ErrNotFound) {
		// Apply fetched every package it needs at once (fetchPackages); this one failed there, or was
		// evicted since.
		if err = a.fetchPackages(ctx, t, []api.PreparedBundle{p}); err == nil {
			data, err = a.Local.Store.Get(p.Package)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bundle %q: package %s from the management side: %w", ref.Name, p.Package, err)
	}
	full, err := render.UnmarshalPackage(data)
	if err != nil {
		return nil, fmt.Errorf("bundle %q: package %s: %w", ref.Name, p.Package, err)
	}
	if full.DeploymentID != rel.DeploymentID {
		return nil, fmt.Errorf("bundle %q: package %s holds deployment %s, not %s", ref.Name, p.Package, full.DeploymentID, rel.DeploymentID)
	}
	return full, nil
}

// fetchPackages fetches the packages of the given bundles that the agent does not hold yet, many to a
// ContentWorkflow (at most api.ContentChunkSize each), and stores them: an apply of fifty bundles costs one
// round trip through Temporal, not fifty.
func (a *Activities) fetchPackages(ctx context.Context, t api.ClusterTarget, bundles []api.PreparedBundle) error {
	var wants []content.Want
	var owners []string
	seen := map[string]bool{}
	for _, p := range bundles {
		if p.Package == "" || seen[p.Package] || a.Local.Store.Has(p.Package) {
			continue
		}
		seen[p.Package] = true
		wants = append(wants, content.Want{Digest: p.Package, Size: p.PackageSize})
		owners = append(owners, p.Bundle)
	}
	if len(wants) == 0 {
		return nil
	}
	all, err := content.FetchAll(ctx, wants, api.ContentChunkSize, func(ctx context.Context, batch []content.Piece) ([]byte, error) {
		in := api.ReadContentInput{Target: t, Chunks: make([]api.ContentChunk, len(batch))}
		for i, piece := range batch {
			in.Chunks[i] = api.ContentChunk{Digest: wants[piece.Index].Digest, Offset: piece.Offset, Length: piece.Length, Bundle: owners[piece.Index]}
		}
		data, err := a.Local.Fetch(ctx, in)
		if err != nil || a.Local.Key.IsZero() {
			return data, err
		}
		plain, err := a.Local.Key.Open(ContentAAD(a.Local.Workspace, a.Local.Name, in.Chunks), data)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("packages for cluster %q: %v (is the management side's "+
				"--installation-key-file the one this agent's key was made from?)", fleet.DisplayName(a.Local.Workspace, a.Local.Name), err), api.ErrTypeNotGranted, nil)
		}
		return plain, nil
	})
	if err != nil {
		return err
	}
	for _, data := range all {
		if _, err := a.Local.Store.Put(data); err != nil {
			return err
		}
	}
	return nil
}
