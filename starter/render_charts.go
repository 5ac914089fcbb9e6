package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/chartload"
	"github.com/flotilla-gitops/flotilla/internal/charts"
	"github.com/flotilla-gitops/flotilla/render"
)

// chartInfo is the remote chart a bundle deploys. JSON names are a contract (`render -o json`).
type chartInfo struct {
	URL     string `json:"url"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

// chartFetcher fetches remote charts as the worker does, into the user's cache (charts are verified by
// digest there, so a preview and the next one share them).
func chartFetcher() *charts.Fetcher {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	// The CLI fetches for the user who runs it, from their own machine: their networks are theirs to reach.
	return &charts.Fetcher{Dir: filepath.Join(dir, "flotilla", "charts"), AllowEveryNetwork: true}
}

// chartLoader resolves a preview's remote charts to their newest matching versions now: what the next
// poll of a GitRepo would deploy.
func chartLoader(ctx context.Context, workspace string, access *api.ChartAccess, tls chartload.TLS, secrets chartload.Secrets) render.ChartLoader {
	return chartload.New(ctx, chartFetcher(), workspace, access, tls, secrets)
}

func chartOf(rel *render.Release) *chartInfo {
	if rel.RemoteChart == nil {
		return nil
	}
	return &chartInfo{URL: rel.RemoteChart.URL, Version: rel.RemoteChart.Version, Digest: rel.RemoteChart.Digest}
}
