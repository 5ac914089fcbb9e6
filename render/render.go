// Package render turns one bundle, for one cluster, into exactly what is applied as one Helm release:
// a chart (the bundle's, or an empty one for manifests and kustomize output), templated values, and a
// post-renderer that appends raw manifests and kustomize output and enforces the target namespace.
package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/postrender"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/fleet/names"
	"github.com/flotilla-gitops/flotilla/fleet/safepath"
	"github.com/flotilla-gitops/flotilla/fleet/target"
	"github.com/flotilla-gitops/flotilla/fleet/tmpl"
)

// Input is one bundle for one cluster.
type Input struct {
	RepoRoot        string
	Bundle          *bundle.Bundle
	Cluster         fleet.ClusterInfo
	GitRepo         string
	Commit          string
	TargetNamespace string
	KeepResources   bool
	CorrectDrift    *fleet.CorrectDrift
	// ForceSyncGeneration is the GitRepo's spec.forceSyncGeneration: raising it redeploys every bundle once.
	ForceSyncGeneration int64
	// GitRepoNamespace is the GitRepo's namespace; empty is fleet-default, whose objects carry no namespace
	// label (api.ReleaseOwner), as they did before workspaces.
	GitRepoNamespace string
	// Charts loads remote charts and unvendored dependencies; without it a bundle that needs one fails.
	Charts ChartLoader
	// ChartLocks are the bundle's chart sources as the GitRepo's plan resolved them (api.BundleRef.Charts).
	ChartLocks []api.ChartLock
}

// Release is what gets applied.
type Release struct {
	Bundle        string
	Name          string
	Namespace     string
	Chart         *chart.Chart
	Values        map[string]any
	PostRenderer  postrender.PostRenderer
	Options       fleet.BundleDeploymentOptions
	Customization string
	Deploy        bool
	// Paused is the bundle's fleet.yaml `paused`: what it runs stays, changes wait.
	Paused bool
	// SyncGeneration is the GitRepo's forceSyncGeneration this rendering carries (Fleet's syncGeneration).
	SyncGeneration int64
	// DeleteNamespace is the bundle's fleet.yaml deleteNamespace: uninstalling the release deletes its
	// namespace. The release remembers it, as keepResources, for whoever uninstalls it later.
	DeleteNamespace bool
	// ForcedNamespace, when set, is the only namespace the release may write to (targetNamespace, or the
	// cluster's confineToNamespace): cluster-scoped objects and other namespaces are refused when applied.
	ForcedNamespace string
	// DeploymentID changes whenever anything applied changes; diff and correctDrift options are excluded, as in Fleet.
	// With ValuesFrom, it covers the sources only once WithValuesFrom has merged them.
	DeploymentID string
	// ValuesFrom are the ConfigMap and Secret keys of the target cluster whose values are merged over
	// Values (helm.valuesFrom), in order. Only the cluster's activity reads them (WithValuesFrom).
	ValuesFrom []ValuesSource
	// ChartLocks are the remote chart and fetched dependencies the release deploys (version and digest).
	ChartLocks []api.ChartLock
	// RemoteChart is the lock of the bundle's chart when it comes from outside the repository.
	RemoteChart *api.ChartLock
	// ObjectLabels are the labels the post-renderer stamps on every object (the owning GitRepo and the
	// bundle): the one input of the post-renderer the deployment ID leaves out, so that the summary,
	// which names a package (activities' packageKey), still tells two GitRepos' identical bundles apart.
	ObjectLabels map[string]string
	// secretStrings are the values taken from valuesFrom Secrets, which Redact keeps out of messages.
	secretStrings []string
}

var releaseName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// ForCluster renders a bundle for a cluster. Every error names the bundle.
func ForCluster(in Input) (*Release, error) {
	b := in.Bundle
	fail := func(err error) (*Release, error) { return nil, fmt.Errorf("bundle %q: %w", b.Name, err) }
	custom, err := target.Customize(b.FleetYAML, in.Cluster)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", fleetFile(b), err))
	}
	opts, deploy := custom.Options, custom.Deploy
	if in.KeepResources {
		opts.KeepResources = true
	}
	if opts.CorrectDrift == nil {
		opts.CorrectDrift = in.CorrectDrift
	}
	rel := &Release{Bundle: b.Name, Options: opts, Customization: custom.Name, Deploy: deploy,
		Paused: b.FleetYAML.Paused, SyncGeneration: in.ForceSyncGeneration, DeleteNamespace: b.FleetYAML.DeleteNamespace}
	rel.Name = names.HelmReleaseName(b.Name)
	if opts.Helm != nil && opts.Helm.ReleaseName != "" {
		rel.Name = opts.Helm.ReleaseName
		if len(rel.Name) > 53 || !releaseName.MatchString(rel.Name) {
			return fail(fmt.Errorf("%s: helm.releaseName %q: must be a DNS name of at most 53 characters", fleetFile(b), rel.Name))
		}
	}
	forced := in.TargetNamespace
	if forced == "" {
		forced = opts.TargetNamespace
	}
	if in.Cluster.ConfineToNamespace != "" {
		// A cluster confined to a namespace shares its API server with others: nothing may leave it.
		forced = in.Cluster.ConfineToNamespace
	}
	rel.Namespace = firstNonEmpty(forced, opts.DefaultNamespace, "default")
	rel.ForcedNamespace = forced
	if opts.ServiceAccount != "" {
		// Silently applying with the cluster's own identity would drop the restriction the user asked for.
		return fail(fmt.Errorf("%s: serviceAccount %q: impersonating a service account is not supported yet; "+
			"remove it, or confine the cluster to a namespace with spec.confineToNamespace", fleetFile(b), opts.ServiceAccount))
	}
	if !deploy {
		return rel, nil
	}
	if rel.Values, err = tmpl.LayeredValues(in.RepoRoot, b.Path, custom.ValuesLevels, opts.Helm, in.Cluster); err != nil {
		return fail(err)
	}
	if opts.Helm != nil {
		confine := firstNonEmpty(in.Cluster.ConfineToNamespace, in.TargetNamespace)
		if rel.ValuesFrom, err = valuesSources(opts.Helm.ValuesFrom, rel.Namespace, confine); err != nil {
			return fail(fmt.Errorf("%s: %w", fleetFile(b), err))
		}
	}
	chartDir := ChartDir(in.RepoRoot, b.Path, opts.Helm)
	if IsRemoteChart(opts.Helm) {
		if in.Charts == nil {
			return fail(fmt.Errorf("%s: %s: remote charts are not fetched here", fleetFile(b), chartSourceName(opts.Helm)))
		}
		chart, lock, err := in.Charts.Remote(opts.Helm, in.ChartLocks)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", fleetFile(b), err))
		}
		rel.Chart, rel.RemoteChart = chart, &lock
		rel.setChartLock(lock)
	}
	var extra []byte
	kustomizeDir := ""
	if opts.Kustomize != nil && opts.Kustomize.Dir != "" {
		kustomizeDir = path.Join(b.Path, opts.Kustomize.Dir)
	} else if chartDir == "" && hasKustomization(in.RepoRoot, b.Path) {
		kustomizeDir = b.Path
	}
	if chartDir != "" {
		if rel.Chart, err = loadChart(in.RepoRoot, chartDir, opts.Helm); err != nil {
			return fail(err)
		}
		if err := addDependencies(rel, in, chartDir, opts.Helm); err != nil {
			return fail(err)
		}
	}
	var overChart *chartKustomization
	var kustomizeDigest []byte
	switch {
	case kustomizeDir != "" && rel.Chart != nil:
		// The chart's output is kustomize's input, and exists only once Helm renders the chart on the
		// cluster: kustomize runs then, in the post-renderer. What it will read is known now.
		if kustomizeDigest, err = kustomizeInputs(in.RepoRoot, kustomizeDir); err != nil {
			return fail(err)
		}
		overChart = &chartKustomization{root: in.RepoRoot, dir: kustomizeDir}
	case kustomizeDir != "":
		if extra, err = kustomize(in.RepoRoot, kustomizeDir); err != nil {
			return fail(err)
		}
	case chartDir != b.Path:
		if extra, err = manifests(in.RepoRoot, b, opts, chartDir); err != nil {
			return fail(err)
		}
	}
	if rel.Chart == nil {
		rel.Chart = emptyChart(rel.Name, extra)
	}
	labels := api.KeyOf(in.GitRepoNamespace, in.GitRepo).OwnerLabels()
	labels[api.LabelBundle] = b.Name
	rel.ObjectLabels = labels
	rel.PostRenderer = &postRenderer{extra: extra, forceNamespace: forced, labels: labels, keepCRDs: !opts.DeleteCRDResources,
		kustomize: overChart}
	if rel.DeploymentID, err = deploymentID(rel, extra, forced, kustomizeDigest); err != nil {
		return fail(err)
	}
	return rel, nil
}

func fleetFile(b *bundle.Bundle) string {
	if b.Path == "." {
		return "fleet.yaml"
	}
	return b.Path + "/fleet.yaml"
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func exists(root, rel string) bool {
	_, err := safepath.Stat(root, rel)
	return err == nil
}

func hasKustomization(root, dir string) bool {
	for _, f := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if exists(root, path.Join(dir, f)) {
			return true
		}
	}
	return false
}

// loadChart reads a chart folder through safepath (Helm's LoadDir would follow symlinks out of the repository).
func loadChart(root, dir string, h *fleet.HelmOptions) (*chart.Chart, error) {
	if !exists(root, path.Join(dir, "Chart.yaml")) {
		if err := safepath.Check(root, dir); err != nil {
			return nil, fmt.Errorf("helm.chart: %w", err)
		}
		name := dir
		if h != nil && h.Chart != "" {
			name = h.Chart
		}
		return nil, fmt.Errorf("chart %q not found (no %s/Chart.yaml in the repository)", name, dir)
	}
	var files []*loader.BufferedFile
	err := safepath.WalkFiles(root, dir, func(rel string, data []byte) error {
		name := strings.TrimPrefix(rel, strings.TrimPrefix(dir, "./")+"/")
		if dir == "." {
			name = rel
		}
		if name == "fleet.yaml" || strings.HasPrefix(path.Base(name), ".") && path.Base(name) != ".helmignore" {
			return nil
		}
		files = append(files, &loader.BufferedFile{Name: name, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chart %q: %w", dir, err)
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("chart %q: %w", dir, err)
	}
	return c, nil
}

func emptyChart(name string, extra []byte) *chart.Chart {
	sum := sha256.Sum256(extra)
	return &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name,
		Version: "0.0.0+" + hex.EncodeToString(sum[:6]), Description: "manifests deployed by Flotilla"}}
}

// deploymentID hashes the chart's files, the values, the extra manifests, what kustomize.dir reads over a
// chart and the release placement.
func deploymentID(rel *Release, extra []byte, forced string, kustomizeDigest []byte) (string, error) {
	h := sha256.New()
	var files []*chart.File
	files = append(files, rel.Chart.Raw...)
	files = append(files, rel.Chart.Templates...)
	files = append(files, rel.Chart.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	meta, _ := json.Marshal(rel.Chart.Metadata)
	h.Write(meta)
	for _, f := range files {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", f.Name, len(f.Data))
		h.Write(f.Data)
	}
	defaults, _ := json.Marshal(rel.Chart.Values)
	h.Write(defaults)
	values, err := json.Marshal(rel.Values)
	if err != nil {
		return "", fmt.Errorf("values: %w", err)
	}
	h.Write(values)
	h.Write(extra)
	if kustomizeDigest != nil {
		// Only when set, so that every deployment ID from before it existed stays the same.
		fmt.Fprintf(h, "\x00kustomize-over-chart\x00")
		h.Write(kustomizeDigest)
	}
	if len(rel.ChartLocks) > 0 {
		// Likewise. The chart's own files are hashed above; subcharts added from a lock are not, so their
		// digests stand for them.
		fmt.Fprintf(h, "\x00chart-locks\x00%s", chartLockDigest(rel.ChartLocks))
	}
	o := rel.Options
	place := []any{rel.Name, rel.Namespace, forced, o.KeepResources, o.ForceSyncGeneration, o.NamespaceLabels, o.NamespaceAnnotations, o.Helm != nil && o.Helm.Force}
	if rel.SyncGeneration != 0 {
		// Only when set, so that every deployment ID from before it existed stays the same.
		place = append(place, rel.SyncGeneration)
	}
	if o.DeleteCRDResources {
		// Likewise: it changes what an uninstall leaves, so the release must be upgraded to record it.
		place = append(place, "deleteCRDResources")
	}
	if rel.DeleteNamespace {
		// The release's labels remember it: setting or clearing it deploys again to relabel. Only when set,
		// as the generation above.
		place = append(place, "deleteNamespace")
	}
	placement, _ := json.Marshal(place)
	h.Write(placement)
	return "s-" + hex.EncodeToString(h.Sum(nil))[:40], nil
}

// InputFor is how a cluster's target renders one of its bundles, loaded from dir (the checkout of
// t.Commit): the worker's render and `flotilla render --gitrepo` build their input here alone.
func InputFor(t api.ClusterTarget, ref api.BundleRef, dir string, b *bundle.Bundle, cluster fleet.ClusterInfo, charts ChartLoader) Input {
	return Input{
		RepoRoot: dir, Bundle: b, Cluster: cluster, GitRepo: t.GitRepo, Commit: t.Commit,
		TargetNamespace: t.Options.TargetNamespace, KeepResources: t.Options.KeepResources, CorrectDrift: t.Options.CorrectDrift,
		ForceSyncGeneration: t.Options.ForceSyncGeneration, GitRepoNamespace: t.Namespace,
		Charts: charts, ChartLocks: ref.Charts,
	}
}
