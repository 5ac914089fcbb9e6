package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	goyaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/yaml"
)

// Kustomize fetches what a kustomization names by URL: a resource, base or component written as a git
// repository is cloned by running git (any remote, file:// included), a file named by http(s) is
// downloaded, and builtin plugins (patches, generators, replacements) load their files the same way. No
// option turns this off, and both happen before the file system is asked anything. So the file system
// checks every kustomization and every builtin plugin config as it serves them, and refuses a file that
// names such a reference: kustomize never sees it.

// RemoteReferenceError says a kustomization or plugin config names something kustomize would fetch.
type RemoteReferenceError struct {
	File, Field, Ref string
}

func (e *RemoteReferenceError) Error() string {
	return fmt.Sprintf("%s: %s %q: kustomize would fetch it from the network; remote bases and files are not supported, vendor them into the repository",
		e.File, e.Field, e.Ref)
}

// remoteRef matches what kustomize fetches rather than reads: a URL with a scheme (http and https files;
// https, http, ssh and file git repositories), git's `user@host:path`, and `github.com/org/repo`, with or
// without go-getter's `git::` prefix. It is wider than kustomize's own tests, never narrower: a local
// path only matches when it starts like one of these.
var remoteRef = regexp.MustCompile(`(?i)^(?:git::)?(?:[a-z][a-z0-9+.-]*://|[a-z][a-z0-9-]*@|github\.com[/:])`)

func isRemote(ref string) bool { return remoteRef.MatchString(strings.TrimSpace(ref)) }

// locationKeys are the fields whose values kustomize (api v0.20) hands to its loader, in kustomizations
// and in builtin plugin configs. Kustomize decodes both through JSON, so keys match whatever their case.
var locationKeys = []string{
	"resources", "bases", "components", "crds", "configurations", "patchesStrategicMerge",
	"generators", "transformers", "validators",
	"path", "paths", "files", "envs", "env", "valuesFile", "additionalValuesFiles", "targetFilePath", "argsFromFile",
}

// inlineConfigKeys hold plugin configs that may be written inline, as YAML text.
var inlineConfigKeys = []string{"generators", "transformers", "validators"}

// freeFormKeys hold values kustomize writes into objects and never loads.
var freeFormKeys = []string{"metadata", "commonAnnotations", "commonLabels", "literals"}

func keyIn(key string, keys []string) bool {
	for _, k := range keys {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

var pluginKinds = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range krusty.GetBuiltinPluginNames() {
		m[k] = true
	}
	return m
}()

// mayHoldPluginConfig is a cheap test before decoding a file kustomize may take as a plugin config: it
// names a builtin kind, or has an escape that could spell one, or NUL bytes (UTF-16, which YAML allows).
func mayHoldPluginConfig(data []byte) bool {
	if bytes.IndexByte(data, '\\') >= 0 || bytes.IndexByte(data, 0) >= 0 {
		return true
	}
	for k := range pluginKinds {
		if bytes.Contains(data, []byte(k)) {
			return true
		}
	}
	return false
}

// pluginSourceKeys are what a kustomization that generators, transformers or validators come from may
// hold: anything else (patches, replacements, transformers of its own) could rewrite a plugin config on
// its way to kustomize, out of reach of this check.
var pluginSourceKeys = []string{"apiVersion", "kind", "metadata", "resources"}

// checkNoRemote refuses a kustomization, or a file holding builtin plugin configs, that names anything
// kustomize would fetch. Other files are data to kustomize and are not looked into. A kustomization
// file is checked both ways, since a kustomization may also list it as a resource.
func (f *repoFS) checkNoRemote(rel string, data []byte) error {
	if slices.Contains(konfig.RecognizedKustomizationFileNames(), path.Base(rel)) {
		if err := f.checkKustomization(rel, data); err != nil {
			return err
		}
	}
	if !mayHoldPluginConfig(data) {
		return nil
	}
	docs, err := decodeDocuments(data)
	if err != nil {
		return nil // not YAML kustomize could take as resources either
	}
	for _, doc := range docs {
		if err := remoteInPluginConfigs(rel, doc); err != nil {
			return err
		}
	}
	return nil
}

// checkKustomization decodes a kustomization as kustomize does; what it cannot decode it will not build.
func (f *repoFS) checkKustomization(rel string, data []byte) error {
	var k any
	j, err := yaml.YAMLToJSON(data)
	if err != nil || json.Unmarshal(j, &k) != nil {
		return nil
	}
	if m, ok := asMap(k); ok {
		if err := f.notePluginSources(rel, m); err != nil {
			return err
		}
	}
	return remoteIn(rel, k, "")
}

// notePluginSources remembers the folders a kustomization takes generators, transformers or validators
// from, and holds a kustomization in such a folder to listing resources only, whose folders are then
// plugin sources too. Kustomize reads a kustomization before the folders it names.
func (f *repoFS) notePluginSources(rel string, k map[string]any) error {
	dir := path.Dir(rel)
	for _, key := range slices.Sorted(maps.Keys(k)) {
		source := f.pluginSources[dir]
		switch {
		case source && !keyIn(key, pluginSourceKeys):
			return fmt.Errorf("%s: %s: a kustomization that generators, transformers or validators come from may only list resources",
				rel, key)
		case source && keyIn(key, []string{"resources"}), keyIn(key, inlineConfigKeys):
			entries, _ := k[key].([]any)
			for _, e := range entries {
				if s, ok := e.(string); ok && !isRemote(s) && !strings.Contains(s, "\n") {
					f.pluginSources[path.Join(dir, s)] = true
				}
			}
		}
	}
	return nil
}

func decodeDocuments(data []byte) ([]any, error) {
	dec := goyaml.NewDecoder(bytes.NewReader(data))
	var docs []any
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

// asMap gives a decoded mapping string keys, as kustomize's JSON round trip does.
func asMap(v any) (map[string]any, bool) {
	switch t := v.(type) {
	case map[string]any:
		return t, true
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, v := range t {
			m[fmt.Sprint(k)] = v
		}
		return m, true
	}
	return nil, false
}

// remoteInPluginConfigs checks every builtin plugin config in v, at any depth (a List's items too).
func remoteInPluginConfigs(file string, v any) error {
	if t, ok := asMap(v); ok {
		if kind, _ := t["kind"].(string); pluginKinds[kind] {
			return remoteIn(file, t, "")
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if err := remoteInPluginConfigs(file, t[k]); err != nil {
				return err
			}
		}
	}
	if t, ok := v.([]any); ok {
		for _, item := range t {
			if err := remoteInPluginConfigs(file, item); err != nil {
				return err
			}
		}
	}
	return nil
}

// remoteIn checks the location fields of a kustomization or plugin config; key is the field v is under.
func remoteIn(file string, v any, key string) error {
	if m, ok := asMap(v); ok {
		v = m
	}
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if keyIn(k, freeFormKeys) {
				continue
			}
			if err := remoteIn(file, t[k], k); err != nil {
				return err
			}
		}
	case []any:
		for _, item := range t {
			if err := remoteIn(file, item, key); err != nil {
				return err
			}
		}
	case string:
		if !keyIn(key, locationKeys) {
			return nil
		}
		refs := []string{t}
		if _, p, ok := strings.Cut(t, "="); ok && strings.EqualFold(key, "files") {
			refs = append(refs, p) // files: [key=path]
		}
		for _, r := range refs {
			if isRemote(r) {
				return &RemoteReferenceError{File: file, Field: key, Ref: redact(r)}
			}
		}
		if keyIn(key, inlineConfigKeys) {
			if docs, err := decodeDocuments([]byte(t)); err == nil {
				for _, doc := range docs {
					if err := remoteInPluginConfigs(file, doc); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// redact drops a password from a reference: errors never carry credentials.
func redact(ref string) string {
	ref = strings.TrimSpace(ref)
	prefix := ""
	if len(ref) > 5 && strings.EqualFold(ref[:5], "git::") {
		prefix, ref = ref[:5], ref[5:]
	}
	if u, err := url.Parse(ref); err == nil && u.User != nil {
		return prefix + u.Redacted()
	}
	return prefix + ref
}
