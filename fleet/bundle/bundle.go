// Package bundle finds the bundles of a repository checkout and reads their fleet.yaml.
package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/names"
	"github.com/flotilla-gitops/flotilla/fleet/rollout"
	"github.com/flotilla-gitops/flotilla/fleet/safepath"
	"github.com/flotilla-gitops/flotilla/fleet/target"
)

// Ref names a bundle folder; Path is slash-separated and relative to the repository root ("." for the root).
type Ref struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Bundle is a bundle folder and its fleet.yaml.
type Bundle struct {
	Ref
	FleetYAML    fleet.FleetYAML
	HasFleetYAML bool
	// Warnings name the fleet.yaml keys Fleet documents that Flotilla reads past, each with its file and line
	// (`web/fleet.yaml: line 7: imageScans is not supported yet and is ignored`), for the caller to show.
	Warnings []string
}

// LoadError locates a fleet.yaml mistake.
type LoadError struct {
	File string
	Line int
	Err  error
}

func (e *LoadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

var fleetFiles = []string{"fleet.yaml", "fleet.yml"}
var markerFiles = []string{"Chart.yaml", "kustomization.yaml", "kustomization.yml", "Kustomization"}

func has(repo *safepath.Repo, dir string, names []string) string {
	for _, n := range names {
		if st, err := repo.Stat(path.Join(dir, n)); err == nil && !st.IsDir() {
			return n
		}
	}
	return ""
}

func hasManifests(entries []fs.DirEntry) bool {
	for _, e := range entries {
		ext := strings.ToLower(path.Ext(e.Name()))
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			return true
		}
	}
	return false
}

// Discover lists the bundles under paths (globs allowed; empty means the root), sorted by path.
// A folder with fleet.yaml is always a bundle; a folder with a chart, a kustomization or manifests is one
// unless it lies inside another bundle, whose subfolders (templates/, overlays/, bases) belong to it.
// Every step goes through the checkout's root: a linked folder is never walked, and a path or glob that
// resolves outside the repository is an error.
func Discover(root, gitRepoName string, paths []string) ([]Ref, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	repo, err := safepath.Open(root)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	fsys := repo.FS()
	seen := map[string]bool{}
	var refs []Ref
	for i, p := range paths {
		starts, err := expand(repo, p)
		if err != nil {
			return nil, fmt.Errorf("paths[%d] %q: %w", i, p, err)
		}
		for _, start := range starts {
			err := fs.WalkDir(fsys, start, func(dir string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if !d.IsDir() {
					return nil
				}
				if dir != start && strings.HasPrefix(d.Name(), ".") {
					return fs.SkipDir
				}
				inside := false
				for q := path.Dir(dir); ; q = path.Dir(q) {
					if seen[q] {
						inside = true
						break
					}
					if q == "." || q == "/" {
						break
					}
				}
				if seen[dir] {
					return nil
				}
				isBundle := has(repo, dir, fleetFiles) != ""
				if !isBundle && !inside {
					entries, _ := fs.ReadDir(fsys, dir)
					isBundle = has(repo, dir, markerFiles) != "" || hasManifests(entries)
				}
				if isBundle {
					seen[dir] = true
					refs = append(refs, Ref{Name: bundleName(repo, dir, gitRepoName), Path: dir})
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("paths[%d] %q: %w", i, p, err)
			}
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Path < refs[j].Path })
	if err := checkDistinct(refs); err != nil {
		return nil, err
	}
	return refs, nil
}

// expand resolves one paths entry (a folder or a glob) to folders inside the repository.
func expand(repo *safepath.Repo, p string) ([]string, error) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		p = "."
	}
	if err := repo.Check(p); err != nil {
		return nil, err
	}
	matches, err := fs.Glob(repo.FS(), p)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range matches {
		st, err := repo.Stat(m)
		if err != nil {
			var esc *safepath.EscapeError
			if errors.As(err, &esc) {
				return nil, err
			}
			continue
		}
		if st.IsDir() {
			dirs = append(dirs, m)
		}
	}
	if len(dirs) == 0 {
		return nil, errors.New("no such folder in the repository")
	}
	sort.Strings(dirs)
	return dirs, nil
}

// bundleName is fleet.yaml's name when it can be read, else Fleet's name derived from the path.
func bundleName(repo *safepath.Repo, rel, gitRepoName string) string {
	if f := has(repo, rel, fleetFiles); f != "" {
		if data, err := repo.ReadFile(path.Join(rel, f)); err == nil {
			if name := declaredName(data); name != "" {
				return name
			}
		}
	}
	if rel == "." {
		return names.HelmReleaseName(gitRepoName)
	}
	return names.HelmReleaseName(gitRepoName + "/" + rel)
}

// declaredName reads fleet.yaml's top-level name alone, as Load will (any case), even when another key is
// wrong: the bundle keeps its name, so its live release stays its own while Load reports the mistake. A
// name that is not a valid label value is not used: Load reports it, and it never reaches a label.
func declaredName(data []byte) string {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return ""
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if strings.EqualFold(k.Value, "name") && v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
			if checkName(v.Value) == nil {
				return v.Value
			}
			return ""
		}
	}
	return ""
}

// Load reads a bundle's fleet.yaml; mistakes name the file and, where the parser knows it, the line.
func Load(root string, ref Ref) (*Bundle, error) {
	b := &Bundle{Ref: ref}
	repo, err := safepath.Open(root)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	if err := repo.Check(ref.Path); err != nil {
		return nil, err
	}
	f := has(repo, ref.Path, fleetFiles)
	if f == "" {
		return b, nil
	}
	file := path.Join(ref.Path, f)
	data, err := repo.ReadFile(file)
	if err != nil {
		return nil, &LoadError{File: file, Err: err}
	}
	fy, warnings, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	b.FleetYAML, b.HasFleetYAML, b.Warnings = fy, true, warnings
	return b, nil
}

// Parse decodes fleet.yaml content. Unknown and repeated keys are errors; keys Fleet documents that
// Flotilla does not act on yet come back as warnings.
func Parse(file string, data []byte) (fleet.FleetYAML, []string, error) {
	var fy fleet.FleetYAML
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return fy, nil, syntaxError(file, err)
	}
	warnings, err := checkKeys(file, &node)
	if err != nil {
		return fy, nil, err
	}
	var generic any
	if err := node.Decode(&generic); err != nil {
		return fy, nil, syntaxError(file, err)
	}
	if generic == nil {
		return fy, warnings, nil
	}
	if _, ok := generic.(map[string]any); !ok {
		return fy, nil, &LoadError{File: file, Line: 1, Err: errors.New("fleet.yaml must be a map of keys such as helm, kustomize, yaml, targetCustomizations")}
	}
	js, err := json.Marshal(generic)
	if err != nil {
		return fy, nil, &LoadError{File: file, Err: err}
	}
	if err := json.Unmarshal(js, &fy); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := jsonField(te.Field)
			return fy, nil, &LoadError{File: file, Line: lineOf(&node, field),
				Err: fmt.Errorf("%s: cannot be a %s (want %s)", field, te.Value, te.Type)}
		}
		return fy, nil, &LoadError{File: file, Err: err}
	}
	if err := checkName(fy.Name); err != nil {
		return fy, nil, &LoadError{File: file, Line: lineOf(&node, "name"), Err: err}
	}
	if err := target.CheckMode(fy.TargetCustomizationMode); err != nil {
		return fy, nil, &LoadError{File: file, Line: lineOf(&node, "targetCustomizationMode"), Err: err}
	}
	if err := checkDependsOn(file, &node, fy.DependsOn); err != nil {
		return fy, nil, err
	}
	if err := rollout.Validate(fy.RolloutStrategy); err != nil {
		return fy, nil, &LoadError{File: file, Line: lineOf(&node, "rolloutStrategy"), Err: err}
	}
	return fy, warnings, nil
}

func syntaxError(file string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 0
	if strings.HasPrefix(msg, "line ") {
		fmt.Sscanf(msg, "line %d:", &line)
		if i := strings.Index(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
	}
	return &LoadError{File: file, Line: line, Err: errors.New(msg)}
}

// lineOf finds the line of a dotted key path (as encoding/json reports it) in a YAML document.
func lineOf(doc *yaml.Node, field string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, key := range strings.Split(field, ".") {
		if n.Kind != yaml.MappingNode {
			break
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if strings.EqualFold(n.Content[i].Value, key) {
				line = n.Content[i].Line
				n = n.Content[i+1]
				found = true
				break
			}
		}
		if !found {
			break
		}
	}
	return line
}

// jsonField drops the Go names of embedded structs (BundleDeploymentOptions.helm → helm).
func jsonField(f string) string {
	parts := strings.Split(f, ".")
	out := parts[:0]
	for _, p := range parts {
		if p != "" && p[0] >= 'A' && p[0] <= 'Z' {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}
