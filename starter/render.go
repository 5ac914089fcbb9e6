package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/fleet/plan"
	"github.com/flotilla-gitops/flotilla/fleet/target"
	"github.com/flotilla-gitops/flotilla/internal/chartload"
	"github.com/flotilla-gitops/flotilla/render"
)

// renderFlags are the flags of `flotilla render`: a folder previewed for a described cluster, or a GitRepo
// previewed for the clusters of the inventory.
type renderFlags struct {
	// Folder preview: the cluster is described on the command line.
	labels      []string
	groups      []string
	valuesFile  string
	clusterName string
	gitRepoName string
	paths       []string
	// GitRepo preview: the cluster comes from the inventory.
	gitRepo        string
	cluster        string
	credentials    string
	gitCredentials string
	cacheDir       string

	output string
}

func newRenderCmd(g *globals) *cobra.Command {
	f := &renderFlags{}
	cmd := &cobra.Command{
		Use:   "render DIR [-l k=v]... [--values FILE] [--name CLUSTER] [-n NAMESPACE] | render [-n NAMESPACE] --gitrepo NAME [--cluster NAME]",
		Short: "Print the objects a cluster would get, after fleet.yaml, targetCustomizations, Helm, kustomize and overlays",
		Long: `Print, as a YAML stream, exactly the objects that would be applied to a cluster: fleet.yaml,
targetCustomizations, ${ } templated values, the Helm chart, kustomize and yaml.overlays are all applied,
as the worker applies them. Flotilla's own flotilla.dev/* labels are left out, as ` + "`fleet test`" + ` leaves out Fleet's.

render DIR previews the folder DIR for a cluster described by -l, --values, --name and -n. DIR
is read as a repository root: its bundles are found as a GitRepo with paths --path would find them, named
as a GitRepo called --gitrepo-name (default: DIR's folder name) names them, and nothing outside DIR is
read. Temporal is not needed. Each bundle's objects follow a "# Source: bundle NAME" comment.

render --gitrepo NAME previews a running GitRepo at its current commit for every registered cluster it
targets (or only --cluster): one "PASS cluster ..." or "FAIL cluster ..." line per cluster goes to stderr,
the objects to stdout, and the exit code is 1 when any cluster fails.

-n/--namespace is the workspace, as everywhere: for DIR the described cluster's (.ClusterNamespace in
templates), for --gitrepo the GitRepo's, whose clusters are those of the same workspace. The Temporal
namespace is --temporal-namespace or TEMPORAL_NAMESPACE.`,
		Example: `  flotilla render ./fleet-examples/multi-cluster/helm -l env=prod
  flotilla render . --path apps --gitrepo-name apps -l env=dev --values dev-values.yaml --name dev-1
  flotilla render --gitrepo example --cluster prod > prod.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.output != "yaml" && f.output != "json" {
				return &exitError{code: 2, err: fmt.Errorf("-o %q: want yaml or json", f.output)}
			}
			switch {
			case f.gitRepo != "" && len(args) > 0:
				return &exitError{code: 2, err: errors.New("give either DIR or --gitrepo NAME, not both")}
			case f.gitRepo != "":
				if err := f.onlyFor("--gitrepo", cmd, "label", "group", "values", "name", "gitrepo-name", "path"); err != nil {
					return err
				}
				return renderGitRepo(cmd, g, f)
			case len(args) == 1:
				if err := f.onlyFor("DIR", cmd, "cluster", "credentials", "git-credentials", "cache-dir"); err != nil {
					return err
				}
				return renderFolder(cmd, f, g.workspace(), args[0])
			default:
				return &exitError{code: 2, err: errors.New("give a folder (render DIR) or a GitRepo (render --gitrepo NAME)")}
			}
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.labels, "label", "l", nil, "DIR: cluster label k=v (repeatable)")
	fl.StringArrayVarP(&f.groups, "group", "g", nil, "DIR: cluster group the cluster belongs to (repeatable)")
	fl.StringVar(&f.valuesFile, "values", "", "DIR: YAML file with the cluster's templateValues (.ClusterValues)")
	fl.StringVar(&f.clusterName, "name", "", "DIR: cluster name (.ClusterName)")
	fl.StringVar(&f.gitRepoName, "gitrepo-name", "", "DIR: name of the GitRepo that bundles and releases are named after (default: DIR's folder name)")
	fl.StringArrayVar(&f.paths, "path", nil, "DIR: folder (glob allowed) scanned for bundles, as GitRepo spec.paths (repeatable; default: all of DIR)")
	fl.StringVar(&f.gitRepo, "gitrepo", "", "preview this running GitRepo against the cluster inventory")
	fl.StringVar(&f.cluster, "cluster", "", "--gitrepo: only this registered cluster")
	fl.StringVar(&f.credentials, "credentials", os.Getenv("FLOTILLA_CREDENTIALS"),
		"--gitrepo: credentials that clientSecretName names, a file or a folder, as the worker's --credentials (env FLOTILLA_CREDENTIALS)")
	fl.StringVar(&f.gitCredentials, "git-credentials", os.Getenv("FLOTILLA_GIT_CREDENTIALS"), "--gitrepo: older name of --credentials FILE (env FLOTILLA_GIT_CREDENTIALS)")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "--gitrepo: keep clones here (default: a temporary folder, removed afterwards)")
	fl.StringVarP(&f.output, "output", "o", "yaml", "output format: yaml (a YAML stream) or json")
	return cmd
}

// onlyFor refuses flags that belong to the other mode, rather than silently ignoring them.
func (f *renderFlags) onlyFor(mode string, cmd *cobra.Command, others ...string) error {
	for _, name := range others {
		if cmd.Flags().Changed(name) {
			return &exitError{code: 2, err: fmt.Errorf("--%s does not apply to render %s", name, mode)}
		}
	}
	return nil
}

// renderFolder previews dir for the cluster the flags describe, in workspace namespace.
func renderFolder(cmd *cobra.Command, f *renderFlags, namespace, dir string) error {
	root, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return &exitError{code: 2, err: fmt.Errorf("%s: not a folder", dir)}
	}
	info := fleet.ClusterInfo{Name: f.clusterName, Namespace: namespace, Groups: f.groups}
	if info.Labels, err = parsePairs("label", f.labels); err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.valuesFile != "" {
		data, err := os.ReadFile(f.valuesFile)
		if err != nil {
			return fmt.Errorf("--values: %w", err)
		}
		if err := yaml.Unmarshal(data, &info.TemplateValues); err != nil {
			return fmt.Errorf("--values %s: %w", f.valuesFile, err)
		}
	}
	name := f.gitRepoName
	if name == "" {
		name = filepath.Base(root)
	}
	refs, err := bundle.Discover(root, name, f.paths)
	if err != nil {
		return err
	}
	if len(refs) == 0 {
		return fmt.Errorf("%s: no bundles (folders with fleet.yaml, a chart, a kustomization or manifests)", dir)
	}
	loaded := make([]plan.Bundle, len(refs))
	for i, ref := range refs {
		loaded[i].Ref = ref
		if loaded[i].Bundle, loaded[i].Err = bundle.Load(root, ref); loaded[i].Err != nil {
			loaded[i].Err = fmt.Errorf("bundle %q: %w", ref.Name, loaded[i].Err)
		}
	}
	res := clusterResult{Cluster: info.Name, Bundles: []bundleResult{}}
	for _, lb := range loaded {
		ref, b := lb.Ref, lb.Bundle
		if lb.Err != nil {
			res.Bundles = append(res.Bundles, bundleResult{Bundle: ref.Name, Path: ref.Path, Error: lb.Err.Error()})
			continue
		}
		// Outside a GitRepo, a bundle's own overrideTargets still say which clusters it goes to.
		if len(b.FleetYAML.OverrideTargets) > 0 && !target.Matches(b.FleetYAML.OverrideTargets, info) {
			res.Bundles = append(res.Bundles, bundleResult{Bundle: ref.Name, Path: ref.Path, Skipped: "its fleet.yaml overrideTargets do not target this cluster"})
			continue
		}
		res.Bundles = append(res.Bundles, renderBundle(render.Input{RepoRoot: root, Bundle: b, Cluster: info, GitRepo: name,
			Charts: chartLoader(cmd.Context(), "", nil, chartload.TLS{}, nil)}, false))
	}
	withDependsOn(&res, loaded, plan.ResolveDependsOn(loaded, name, namespace))
	if err := writeResults(cmd.OutOrStdout(), f.output, []clusterResult{res}, false); err != nil {
		return err
	}
	if errs := res.errors(); len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}

// clusterResult is what one cluster gets from every bundle. JSON names are a contract (`render -o json`).
type clusterResult struct {
	Cluster string         `json:"cluster"`
	Bundles []bundleResult `json:"bundles"`
}

func (c clusterResult) errors() []string {
	var errs []string
	for _, b := range c.Bundles {
		if b.Error != "" {
			errs = append(errs, b.Error)
		}
	}
	return errs
}

func (c clusterResult) objectCount() int {
	n := 0
	for _, b := range c.Bundles {
		n += len(b.Objects)
	}
	return n
}

// bundleResult is one bundle rendered for one cluster: its objects, why it is not deployed, or its error.
type bundleResult struct {
	Bundle        string `json:"bundle"`
	Path          string `json:"path"`
	Release       string `json:"release,omitempty"`
	Namespace     string `json:"namespace,omitempty"`
	Customization string `json:"targetCustomization,omitempty"`
	Skipped       string `json:"skipped,omitempty"`
	Error         string `json:"error,omitempty"`
	// Options are the bundle's effective options on this cluster: fleet.yaml, its targetCustomizations and
	// the GitRepo merged as the worker merges them.
	Options *effectiveOptions `json:"options,omitempty"`
	// ValuesFrom names the cluster's ConfigMap and Secret keys (helm.valuesFrom) whose values the worker
	// merges over these when it checks and applies the bundle. A preview reads no cluster, as `fleet test`
	// reads none: the objects are rendered without them.
	ValuesFrom []string `json:"valuesFrom,omitempty"`
	// Chart is the remote chart (helm.repo, a chart URL, oci://) resolved for this preview.
	Chart *chartInfo `json:"chart,omitempty"`
	// DependsOn is what the bundle waits for on the cluster before it is installed or upgraded.
	DependsOn []dependsOnResult `json:"dependsOn,omitempty"`
	Objects   []map[string]any  `json:"objects,omitempty"`
	manifest  []byte
}

// effectiveOptions are the options that decide what the worker does with a bundle on a cluster, beyond
// its objects. JSON names are a contract (`render -o json`).
type effectiveOptions struct {
	CorrectDrift      bool `json:"correctDrift"`
	CorrectDriftForce bool `json:"correctDriftForce,omitempty"`
	KeepResources     bool `json:"keepResources"`
	Paused            bool `json:"paused"`
	// SyncGeneration is the GitRepo's forceSyncGeneration the cluster reports once it applied the bundle.
	SyncGeneration int64 `json:"syncGeneration"`
	// ForceSyncGeneration is the bundle's own (fleet.yaml or targetCustomization): raising it redeploys it.
	ForceSyncGeneration int64 `json:"forceSyncGeneration,omitempty"`
}

func optionsOf(rel *render.Release, gitRepoPaused bool) *effectiveOptions {
	o := &effectiveOptions{KeepResources: rel.Options.KeepResources, Paused: rel.Paused || gitRepoPaused,
		SyncGeneration: rel.SyncGeneration, ForceSyncGeneration: rel.Options.ForceSyncGeneration}
	if cd := rel.Options.CorrectDrift; cd != nil {
		o.CorrectDrift, o.CorrectDriftForce = cd.Enabled, cd.Enabled && cd.Force
	}
	return o
}

func (o *effectiveOptions) String() string {
	s := fmt.Sprintf("correctDrift=%t keepResources=%t paused=%t syncGeneration=%d", o.CorrectDrift, o.KeepResources, o.Paused, o.SyncGeneration)
	if o.CorrectDriftForce {
		s += " correctDrift.force=true"
	}
	if o.ForceSyncGeneration != 0 {
		s += fmt.Sprintf(" forceSyncGeneration=%d", o.ForceSyncGeneration)
	}
	return s
}

// renderBundle renders one bundle for one cluster exactly as the worker does (render.ForCluster, then
// Helm's client-only install with the post-renderer), without Flotilla's ownership labels.
func renderBundle(in render.Input, gitRepoPaused bool) bundleResult {
	b := in.Bundle
	out := bundleResult{Bundle: b.Name, Path: b.Path}
	rel, err := render.ForCluster(in)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.Release, out.Namespace, out.Customization = rel.Name, rel.Namespace, rel.Customization
	out.Options = optionsOf(rel, gitRepoPaused)
	out.Chart = chartOf(rel)
	for _, src := range rel.ValuesFrom {
		out.ValuesFrom = append(out.ValuesFrom, src.String())
	}
	if !rel.Deploy {
		out.Skipped = fmt.Sprintf("targetCustomization %q says doNotDeploy", rel.Customization)
		return out
	}
	manifest, err := render.Template(rel, render.TemplateOptions{WithoutOwnershipLabels: true})
	if err != nil {
		out.Error = err.Error()
		return out
	}
	if out.Objects, err = splitObjects(manifest); err != nil {
		out.Error = fmt.Sprintf("bundle %q: rendered output: %v", b.Name, err)
		return out
	}
	out.manifest = manifest
	return out
}

func splitObjects(manifest []byte) ([]map[string]any, error) {
	objs := []map[string]any{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			objs = append(objs, obj)
		}
	}
}

// writeResults prints the objects. YAML is a stream whose comments say where each part comes from, so it
// can be read, diffed or piped to `kubectl apply -f -` (one cluster at a time).
func writeResults(w io.Writer, format string, results []clusterResult, clusterHeaders bool) error {
	if format == "json" {
		return printStructured(w, "json", results)
	}
	var buf bytes.Buffer
	for _, c := range results {
		if clusterHeaders {
			fmt.Fprintf(&buf, "# Cluster: %s\n", c.Cluster)
		}
		for _, b := range c.Bundles {
			fmt.Fprintf(&buf, "# Source: bundle %s (%s)", b.Bundle, b.Path)
			switch {
			case b.Error != "":
				fmt.Fprintf(&buf, ": FAILED: %s\n", oneLine(b.Error))
				continue
			case b.Skipped != "":
				fmt.Fprintf(&buf, ": not deployed: %s\n", b.Skipped)
				continue
			}
			fmt.Fprintf(&buf, ": release %s in namespace %s", b.Release, b.Namespace)
			if b.Customization != "" {
				fmt.Fprintf(&buf, ", targetCustomization %s", b.Customization)
			}
			buf.WriteString("\n")
			if b.Options != nil {
				fmt.Fprintf(&buf, "# Options: %s\n", b.Options)
			}
			if b.Chart != nil {
				fmt.Fprintf(&buf, "# Chart: %s version %s (%s)\n", b.Chart.URL, b.Chart.Version, b.Chart.Digest)
			}
			if len(b.DependsOn) > 0 {
				fmt.Fprintf(&buf, "# Depends on: %s\n", dependsOnLine(b.DependsOn))
			}
			if len(b.ValuesFrom) > 0 {
				fmt.Fprintf(&buf, "# Rendered without the values the cluster holds in valuesFrom %s (read on the cluster when deployed)\n",
					strings.Join(b.ValuesFrom, ", "))
			}
			m := bytes.TrimLeft(b.manifest, "\n")
			if len(m) > 0 && !bytes.HasPrefix(m, []byte("---")) {
				buf.WriteString("---\n")
			}
			buf.Write(m)
			if len(m) > 0 && !bytes.HasSuffix(m, []byte("\n")) {
				buf.WriteString("\n")
			}
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}
