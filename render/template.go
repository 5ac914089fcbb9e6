package render

import (
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
)

// TemplateOptions set what the client-side render assumes of the cluster.
type TemplateOptions struct {
	KubeVersion string
	APIVersions []string
	// WithoutOwnershipLabels leaves out the flotilla.dev/* labels Flotilla stamps on what it deploys to find
	// and own it, as `fleet test` leaves out Fleet's: a preview shows the objects as the repository describes them.
	WithoutOwnershipLabels bool
}

// Template renders the release as `helm template` would, then post-renders it: the objects that would be
// applied, as a YAML stream. It needs no cluster.
func Template(rel *Release, o TemplateOptions) ([]byte, error) {
	if !rel.Deploy {
		return nil, nil
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace, install.IncludeCRDs = true, true, true, true
	install.ReleaseName, install.Namespace = rel.Name, rel.Namespace
	install.DisableHooks = false
	install.PostRenderer = rel.PostRenderer
	if p, ok := rel.PostRenderer.(*postRenderer); ok && o.WithoutOwnershipLabels {
		bare := *p
		bare.labels = nil
		install.PostRenderer = &bare
	}
	if rel.Options.Helm != nil {
		install.SkipSchemaValidation = rel.Options.Helm.SkipSchemaValidation
	}
	if o.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(o.KubeVersion)
		if err != nil {
			return nil, err
		}
		install.KubeVersion = kv
	}
	install.APIVersions = o.APIVersions
	r, err := install.Run(rel.Chart, rel.Values)
	if err != nil {
		return nil, fmt.Errorf("bundle %q: %w", rel.Bundle, err)
	}
	return []byte(r.Manifest), nil
}
