package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/fleet/tmpl"
	"github.com/flotilla-gitops/flotilla/internal/chartload"
	"github.com/flotilla-gitops/flotilla/render"
)

// render renders a bundle for a cluster. forApply asks for the chart and values too; otherwise the result
// may come from the cache without them.
func (a *Activities) render(ctx context.Context, h *clusterHandle, t api.ClusterTarget, ref api.BundleRef, forApply bool) (*render.Release, error) {
	if h.prepared != nil {
		return a.renderPrepared(ctx, h, t, ref, forApply)
	}
	key, cacheable := h.renderKey(t, ref)
	c := &a.renders
	c.mu.Lock()
	if e, ok := c.entries[key]; cacheable && ok && (e.full || !forApply) {
		rel := e.rel
		e.used = time.Now()
		if e.full {
			e.rel, e.full = lighten(rel), false
		}
		c.entries[key] = e
		c.mu.Unlock()
		return rel, nil
	}
	c.mu.Unlock()
	b, err := bundle.Load(h.dir, bundle.Ref{Name: ref.Name, Path: ref.Path})
	if err != nil {
		return nil, fmt.Errorf("bundle %q: %w", ref.Name, err)
	}
	charts := a.chartLoader(ctx, t.Key(), t.ChartAccess, chartload.TLS{CABundle: t.CABundle, InsecureSkipTLSVerify: t.InsecureSkipTLSVerify})
	rel, err := render.ForCluster(render.InputFor(t, ref, h.dir, b, h.info, charts))
	if err != nil {
		return nil, err
	}
	if !cacheable {
		return rel, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]renderEntry{}
	}
	if len(c.entries) >= renderCacheSize {
		c.evictOldest()
	}
	if forApply {
		c.entries[key] = renderEntry{rel: lighten(rel), used: time.Now()}
	} else {
		c.entries[key] = renderEntry{rel: rel, used: time.Now(), full: true}
	}
	return rel, nil
}

// lighten is what a check needs of a rendering: everything but the chart and values.
func lighten(rel *render.Release) *render.Release {
	light := *rel
	light.Chart, light.Values, light.PostRenderer = nil, nil, nil
	return &light
}

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

// renderErrorType is the error type of a bundle that did not render: a `${ }` template that failed for
// this cluster, a valuesFrom source the cluster does not have (or that is not Helm values), or anything
// else wrong with the bundle (its fleet.yaml, its chart, a path that leaves the repository). A path that
// escapes is a BundleError like the rest; it needs no type of its own.
func renderErrorType(err error) string {
	var pe *preparedError
	if errors.As(err, &pe) {
		return pe.typ
	}
	var te *tmpl.TemplateError
	if errors.As(err, &te) {
		return api.ErrTypeTemplate
	}
	var vf *render.ValuesFromError
	if errors.As(err, &vf) {
		return api.ErrTypeValuesFrom
	}
	return api.ErrTypeBundle
}
