package activities

import (
	"context"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/chartload"
	"github.com/flotilla-gitops/flotilla/render"
)

// chartLoader is render's ChartLoader within one activity; nil when the worker fetches no charts.
func (a *Activities) chartLoader(ctx context.Context, key api.GitRepoKey, access *api.ChartAccess, tls chartload.TLS) render.ChartLoader {
	if a.Charts == nil {
		return nil
	}
	return chartload.New(ctx, a.Charts, key.Namespace, access, tls, a.HelmCreds)
}
