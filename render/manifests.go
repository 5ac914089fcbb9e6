package render

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	goyaml "go.yaml.in/yaml/v3"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/fleet/safepath"
)

func isManifestFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// manifests collects a bundle's raw manifests with its yaml.overlays applied: an overlay file at the same
// relative path replaces the base file; `<name>_patch.yaml` merge-patches `<name>.yaml`.
func manifests(root string, b *bundle.Bundle, opts fleet.BundleDeploymentOptions, chartDir string) ([]byte, error) {
	skip := map[string]bool{}
	if opts.Helm != nil {
		for _, f := range opts.Helm.ValuesFiles {
			skip[path.Join(b.Path, f)] = true
		}
	}
	files := map[string][]byte{}
	var order []string
	var nested []string
	err := safepath.WalkFiles(root, b.Path, func(rel string, data []byte) error {
		local := strings.TrimPrefix(rel, b.Path+"/")
		if b.Path == "." {
			local = rel
		}
		dir := path.Dir(local)
		base := path.Base(local)
		if (base == "fleet.yaml" || base == "fleet.yml") && dir != "." {
			nested = append(nested, dir+"/")
		}
		if base == "Chart.yaml" && dir != "." {
			nested = append(nested, dir+"/")
		}
		if !isManifestFile(local) || base == "fleet.yaml" || base == "fleet.yml" || skip[rel] ||
			strings.HasPrefix(local, "overlays/") || (chartDir != "" && strings.HasPrefix(rel+"/", chartDir+"/")) {
			return nil
		}
		files[local] = data
		order = append(order, local)
		return nil
	})
	if err != nil {
		return nil, err
	}
	inNested := func(f string) bool {
		for _, n := range nested {
			if strings.HasPrefix(f, n) {
				return true
			}
		}
		return false
	}
	if opts.YAML != nil {
		for _, ov := range opts.YAML.Overlays {
			dir := path.Join(b.Path, "overlays", ov)
			if !exists(root, dir) {
				return nil, fmt.Errorf("yaml.overlays %q: no folder %s", ov, dir)
			}
			err := safepath.WalkFiles(root, dir, func(rel string, data []byte) error {
				local := strings.TrimPrefix(rel, dir+"/")
				if !isManifestFile(local) {
					return nil
				}
				ext := path.Ext(local)
				stem := strings.TrimSuffix(local, ext)
				if strings.HasSuffix(stem, "_patch") {
					target := ""
					for _, e := range []string{".yaml", ".yml", ".json"} {
						if _, ok := files[strings.TrimSuffix(stem, "_patch")+e]; ok {
							target = strings.TrimSuffix(stem, "_patch") + e
						}
					}
					if target == "" {
						return fmt.Errorf("%s: patches %s, which the bundle does not have", rel, strings.TrimSuffix(stem, "_patch")+ext)
					}
					patched, err := mergePatch(files[target], data)
					if err != nil {
						return fmt.Errorf("%s: %w", rel, err)
					}
					files[target] = patched
					return nil
				}
				if _, ok := files[local]; !ok {
					order = append(order, local)
				}
				files[local] = data
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	sort.Strings(order)
	var out bytes.Buffer
	for _, f := range order {
		if inNested(f) {
			continue
		}
		docs, err := splitDocuments(path.Join(b.Path, f), files[f])
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			out.WriteString("---\n")
			out.Write(d)
		}
	}
	// The rendering is kept (render cache, release) for as long as the cluster is managed: no slack.
	return bytes.Clone(out.Bytes()), nil
}

func mergePatch(base, patch []byte) ([]byte, error) {
	bj, err := yaml.YAMLToJSON(base)
	if err != nil {
		return nil, err
	}
	pj, err := yaml.YAMLToJSON(patch)
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(bj, pj)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(merged)
}

// splitDocuments returns the Kubernetes objects of a YAML file; documents without `kind` (values files,
// notes) are not objects and are skipped. A syntax error names the file and line.
func splitDocuments(file string, data []byte) ([][]byte, error) {
	dec := goyaml.NewDecoder(bytes.NewReader(data))
	var docs [][]byte
	for {
		var node goyaml.Node
		err := dec.Decode(&node)
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, fmt.Errorf("%s: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		var obj map[string]any
		if err := node.Decode(&obj); err != nil {
			if node.Kind == goyaml.DocumentNode && len(node.Content) > 0 && node.Content[0].Kind != goyaml.MappingNode {
				continue
			}
			return nil, fmt.Errorf("%s: line %d: %w", file, node.Line, err)
		}
		if obj == nil || obj["kind"] == nil {
			continue
		}
		if obj["apiVersion"] == nil {
			return nil, fmt.Errorf("%s: line %d: object of kind %v has no apiVersion", file, node.Line, obj["kind"])
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		docs = append(docs, b)
	}
	return docs, nil
}

// kustomize builds dir in process over the confined checkout, reading only what its kustomizations
// name, at most MaxKustomizeRead bytes, and nothing from the network.
func kustomize(root, dir string) ([]byte, error) {
	return kustomizeWithin(root, dir, MaxKustomizeRead)
}

func kustomizeWithin(root, dir string, limit int64) ([]byte, error) {
	return buildKustomize(root, dir, limit, kustomizeBuild{})
}

// chartOutputFile is the resource a chart's rendered output becomes in its bundle's kustomize.dir: Fleet's
// name for it (internal/helmdeployer/kustomize), which a kustomization may list itself.
const chartOutputFile = "fleet-manifests.yaml"

// kustomizeBuild says what a build of a bundle with a chart adds to the repository, and records.
type kustomizeBuild struct {
	// overChart runs the build over a chart's rendered output, chartOutput (see kustomizeOver).
	overChart   bool
	chartOutput []byte
	// listOutput lists chartOutputFile in the kustomization even when chartOutput holds no object.
	listOutput bool
	// reads, when not nil, receives every file the build read, by repository path.
	reads map[string][]byte
}

// kustomizeOver builds dir over a chart's rendered output, as Fleet's post-renderer does: the output
// becomes the file fleet-manifests.yaml in dir, first among the kustomization's resources unless it
// lists it already, and what kustomize builds replaces it. Output without objects adds the file but
// leaves the kustomization as written, as in Fleet. Only the build sees either file; nothing is written.
func kustomizeOver(root, dir string, chartOutput []byte) ([]byte, error) {
	return buildKustomize(root, dir, MaxKustomizeRead, kustomizeBuild{overChart: true, chartOutput: chartOutput})
}

// kustomizeInputs is a digest of what a build of dir over a chart's output reads from the repository.
// Kustomize runs over a chart when Helm renders it, on the cluster; the rendering must know before then
// what the build depends on, for the deployment ID. What a build reads follows from the kustomizations,
// never from the resources' content, so a build over an empty output reads the same files. That build may
// well fail (a patch of the chart's objects finds nothing to patch); only a refusal (a remote reference,
// a path out of the repository, the read limit) is an error here, as it would be then.
func kustomizeInputs(root, dir string) ([]byte, error) {
	if exists(root, dir) && !hasKustomization(root, dir) {
		return nil, fmt.Errorf("kustomize.dir %q: no %s to build the chart's output with", dir, kustomizationFiles())
	}
	reads := map[string][]byte{}
	_, err := buildKustomize(root, dir, MaxKustomizeRead, kustomizeBuild{overChart: true, listOutput: true, reads: reads})
	var refused *refusedError
	if errors.As(err, &refused) || errors.Is(err, errNoKustomizeDir) {
		return nil, err
	}
	delete(reads, path.Join(dir, chartOutputFile))
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(reads)) {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", p, len(reads[p]))
		h.Write(reads[p])
	}
	return h.Sum(nil), nil
}

// refusedError is a build the file system refused to serve: an escape, a remote reference, the read limit.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

var errNoKustomizeDir = errors.New("no such folder in the repository")

func buildKustomize(root, dir string, limit int64, b kustomizeBuild) ([]byte, error) {
	if !exists(root, dir) {
		return nil, fmt.Errorf("kustomize.dir %q: %w", dir, errNoKustomizeDir)
	}
	repo, err := safepath.Open(root)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	fsys := newRepoFS(repo, limit)
	fsys.reads = b.reads
	if b.overChart {
		if err := fsys.addChartOutput(dir, b.chartOutput, b.listOutput || hasObjects(b.chartOutput)); err != nil {
			return nil, fmt.Errorf("kustomize %s: %w", dir, err)
		}
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(fsys, mounted(dir))
	// A refusal comes first: kustomize may have turned it into "missing kustomization", or worked around it.
	if fsys.refused != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, &refusedError{fsys.refused})
	}
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %s", dir, strings.ReplaceAll(err.Error(), kustomizeMount+"/", ""))
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	return out, nil
}

// addChartOutput adds a chart's output to dir as chartOutputFile and, when list is set, lists it first
// among the resources of dir's kustomization (unless the kustomization lists it already).
func (f *repoFS) addChartOutput(dir string, output []byte, list bool) error {
	f.overlay = map[string][]byte{path.Join(dir, chartOutputFile): output}
	if !list {
		return nil
	}
	file := ""
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if fi, err := f.repo.Stat(path.Join(dir, name)); err == nil && !fi.IsDir() {
			file = path.Join(dir, name)
			break
		}
	}
	if file == "" {
		return fmt.Errorf("%s: no %s to build the chart's output with", dir, kustomizationFiles())
	}
	data, err := f.repo.ReadFile(file)
	if err != nil {
		return &refusedError{f.refuse(err)}
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil // kustomize reports it, naming the file
	}
	if k == nil {
		k = map[string]any{}
	}
	resources, _ := k["resources"].([]any)
	if slices.Contains(resources, any(chartOutputFile)) {
		return nil
	}
	k["resources"] = append([]any{chartOutputFile}, resources...)
	listed, err := yaml.Marshal(k)
	if err != nil {
		return err
	}
	f.overlay[file] = listed
	return nil
}

// hasObjects reports whether a rendered stream holds at least one object.
func hasObjects(stream []byte) bool {
	dec := goyaml.NewDecoder(bytes.NewReader(stream))
	for {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			return false
		}
		if obj, ok := doc.(map[string]any); ok && len(obj) > 0 {
			return true
		}
	}
}

// kustomizationFiles names the files kustomize takes a kustomization from, for messages.
func kustomizationFiles() string {
	names := konfig.RecognizedKustomizationFileNames()
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
