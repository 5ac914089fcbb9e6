package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/render"
)

// renderOn renders a bundle for the cluster as render does, then reads its valuesFrom sources on the
// cluster and merges them (render.Release.WithValuesFrom): the deployment ID a check compares and an apply
// installs covers what the sources hold now. Their content stays in this activity: only the deployment ID
// is returned, and only render.ValuesFromError messages, which carry none of it. The rendering without the
// sources is what the render cache keeps; the sources are read afresh, one GET each, on every check and
// every apply, as Fleet's agent reads them at every deploy.
//
// A source that cannot be read is the bundle's error (a *render.ValuesFromError); only a lost cluster is
// the cluster's, returned as unreachable.
func (a *Activities) renderOn(ctx context.Context, h *clusterHandle, t api.ClusterTarget, ref api.BundleRef, forApply bool) (rel *render.Release, unreachable, err error) {
	rel, err = a.render(ctx, h, t, ref, forApply)
	if err != nil || !rel.Deploy || len(rel.ValuesFrom) == 0 {
		return rel, nil, err
	}
	loaded := make([]render.LoadedValues, len(rel.ValuesFrom))
	for i, src := range rel.ValuesFrom {
		data, uid, err := h.client.ReadValues(ctx, agentclient.ValuesKey{Secret: src.Secret, Namespace: src.Namespace, Name: src.Name, Key: src.Key})
		switch {
		case err == nil:
			loaded[i] = render.LoadedValues{Source: src, UID: uid, Data: data}
			continue
		case agentclient.IsUnreachable(err):
			return nil, err, nil
		case errors.Is(err, agentclient.ErrValuesNotFound):
			return nil, nil, valuesFromError(rel, src, err.Error())
		default:
			// Forbidden, mostly: the API server's message names the object and the identity, not its content.
			return nil, nil, valuesFromError(rel, src, strings.TrimPrefix(err.Error(), "Internal error occurred: "))
		}
	}
	with, err := rel.WithValuesFrom(loaded)
	return with, nil, err
}

func valuesFromError(rel *render.Release, src render.ValuesSource, reason string) error {
	return fmt.Errorf("bundle %q: %w", rel.Bundle, &render.ValuesFromError{Source: src, Reason: reason})
}
