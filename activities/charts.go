package activities

import (
	"context"
	"encoding/json"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet/render"
	"github.com/flotilla-gitops/flotilla/internal/chartload"
)

// chartKey is what a rendering's cache key takes of how its charts are fetched and pinned.
func chartKey(t api.ClusterTarget, locks []api.ChartLock) string {
	if t.ChartAccess == nil && len(locks) == 0 {
		return ""
	}
	b, _ := json.Marshal([]any{t.ChartAccess, t.CABundle, t.InsecureSkipTLSVerify, locks})
	return string(b)
}

// chartLoader is render's ChartLoader within one activity; nil when the worker fetches no charts.
func (a *Activities) chartLoader(ctx context.Context, access *api.ChartAccess, tls chartload.TLS) render.ChartLoader {
	if a.Charts == nil {
		return nil
	}
	return chartload.New(ctx, a.Charts, access, tls, a.HelmCreds)
}
