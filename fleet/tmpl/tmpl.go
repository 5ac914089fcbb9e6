// Package tmpl renders Fleet's `${ }` templates in Helm values for one cluster, with missing keys as
// errors and sprig minus every function that reads the environment, the network, the clock, randomness
// or other templates (funcs.go). A render is bounded (limits.go): whatever a template says, it renders at
// most MaxOutput bytes, builds no value over that, and stops after MaxSteps steps or MaxRenderTime.
package tmpl

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/safepath"
	"github.com/flotilla-gitops/flotilla/fleet/target"
)

// Context is what templates see.
func Context(c fleet.ClusterInfo) map[string]any {
	// A copy: sprig's set and unset change maps in place, and the next render must not see that.
	values, _ := copyValue(c.TemplateValues).(map[string]any)
	if values == nil {
		values = map[string]any{}
	}
	return map[string]any{
		"ClusterName":        c.Name,
		"ClusterNamespace":   c.Namespace,
		"ClusterLabels":      filterLabels(c.Labels, true),
		"ClusterAnnotations": filterLabels(c.Annotations, false),
		"ClusterValues":      values,
	}
}

// filterLabels drops kubectl's and Rancher's bookkeeping keys, as Fleet does; labels keep Fleet's own.
func filterLabels(in map[string]string, keepFleet bool) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		drop := strings.HasPrefix(k, "kubectl.kubernetes.io/") || strings.Contains(k, "cattle.io/")
		if drop && keepFleet && (strings.HasPrefix(k, "fleet.cattle.io/") || strings.HasPrefix(k, "management.cattle.io/")) {
			drop = false
		}
		if !drop {
			out[k] = v
		}
	}
	return out
}

// RenderText renders one template with `${ }` delimiters and missingkey=error, within the limits
// (MaxOutput, MaxDepth, MaxCode, MaxSteps, MaxRenderTime).
func RenderText(name, text string, c fleet.ClusterInfo) (string, error) {
	tree, used, err := compile(name, text)
	if err != nil {
		return "", err
	}
	b := newBudget(renderTimeout)
	funcs := template.FuncMap{
		stepFunc: func() (string, error) { return "", b.spend("range", 1) },
		passFunc: func(v any) (any, error) { return v, b.spend("comparison", 1) },
	}
	for name := range used {
		if f := functions[name]; f != nil {
			funcs[name] = f.bind(b)
		}
	}
	t, err := template.New(name).Option("missingkey=error").Funcs(funcs).AddParseTree(name, tree)
	if err != nil {
		return "", err
	}
	var out cappedWriter
	if err := t.Execute(&out, Context(c)); err != nil {
		return "", err
	}
	return out.String(), nil
}

// copyValue copies the maps and lists of YAML or JSON data.
func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}

// renderMap templates a values map through its YAML text, as Fleet does, and parses it back.
func renderMap(source string, v map[string]any, c fleet.ClusterInfo) (map[string]any, error) {
	if len(v) == 0 {
		return v, nil
	}
	text, err := yaml.Marshal(v)
	if err != nil {
		return nil, &TemplateError{Source: source, Err: err}
	}
	return renderYAML(source, string(text), c)
}

func renderYAML(source, text string, c fleet.ClusterInfo) (map[string]any, error) {
	out, err := RenderText(source, text, c)
	if err != nil {
		return nil, &TemplateError{Source: source, Err: err}
	}
	if d := renderedDuplicate(text, out); d != nil {
		return nil, &TemplateError{Source: source, Err: d}
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(out), &m); err != nil {
		return nil, &TemplateError{Source: source, Err: fmt.Errorf("rendered values are not valid YAML: %w", err)}
	}
	return m, nil
}

// Values builds the Helm values of one level of options for one cluster: helm.values, then each
// valuesFiles entry (read from inside the repository only) merged over them in order, then
// helm.templateValues.
func Values(root, bundlePath string, h *fleet.HelmOptions, c fleet.ClusterInfo) (map[string]any, error) {
	if h == nil {
		return nil, nil
	}
	level := target.ValuesLevel{Field: "helm.values", Values: h.Values, ValuesFiles: h.ValuesFiles}
	return LayeredValues(root, bundlePath, []target.ValuesLevel{level}, h, c)
}

// LayeredValues builds a bundle's Helm values for one cluster from its levels in Fleet's order (the root,
// then each customization applied; within a level its inline values, then its valuesFiles in order), a
// later layer merged over an earlier one; then h's helm.templateValues set their top-level keys. h holds
// the merged options: whether to template at all, and the templateValues.
//
// Fleet merges every layer first and templates the result once, so a `${ }` a later layer replaces is
// never rendered, and a cluster lacking what it needs can be given a value of its own instead of failing.
// Here each values file is templated on its own (its errors name the file, and its text may be templated
// beyond YAML strings), and each level's inline values are templated without the keys later layers
// replace: the same result, with each error naming where it comes from.
func LayeredValues(root, bundlePath string, levels []target.ValuesLevel, h *fleet.HelmOptions, c fleet.ClusterInfo) (map[string]any, error) {
	if h == nil {
		return nil, nil
	}
	fleetFile := path.Join(bundlePath, "fleet.yaml")
	pre := !h.DisablePreProcess
	type layer struct {
		field  string         // inline values of a level: the field errors name; "" for a file
		values map[string]any // raw inline values, or a file's values (templated already)
	}
	var layers []layer
	for _, l := range levels {
		layers = append(layers, layer{field: l.Field, values: l.Values})
		for _, f := range l.ValuesFiles {
			fileValues, err := valuesFile(root, bundlePath, f, pre, c)
			if err != nil {
				return nil, err
			}
			layers = append(layers, layer{values: fileValues})
		}
	}
	var values map[string]any
	for i, l := range layers {
		v := l.values
		if l.field != "" && pre {
			for _, later := range layers[i+1:] {
				v = withoutReplaced(v, later.values)
			}
			var err error
			if v, err = renderMap(fleetFile+": "+l.field, v, c); err != nil {
				return nil, err
			}
		}
		values = target.MergeValues(values, v)
	}
	if pre && len(h.TemplateValues) > 0 {
		values = target.MergeValues(values, nil)
		if values == nil {
			values = map[string]any{}
		}
		for _, k := range slices.Sorted(maps.Keys(h.TemplateValues)) {
			out, err := RenderText(k, h.TemplateValues[k], c)
			if err != nil {
				return nil, &TemplateError{Source: fleetFile + ": helm.templateValues." + k, Err: err}
			}
			if d := renderedDuplicate(h.TemplateValues[k], out); d != nil {
				return nil, &TemplateError{Source: fleetFile + ": helm.templateValues." + k, Err: d}
			}
			var v any
			if err := yaml.Unmarshal([]byte(out), &v); err != nil {
				return nil, &TemplateError{Source: fleetFile + ": helm.templateValues." + k, Err: err}
			}
			values[k] = v
		}
	}
	return legacyLabels(values, c.Labels), nil
}

// withoutReplaced is v without what merging over with target.MergeValues replaces: a key over sets is
// dropped, unless both sides hold a map there, which merge key by key.
func withoutReplaced(v, over map[string]any) map[string]any {
	if len(v) == 0 || len(over) == 0 {
		return v
	}
	out := make(map[string]any, len(v))
	for k, x := range v {
		o, replaced := over[k]
		if !replaced {
			out[k] = x
			continue
		}
		xm, isMap := x.(map[string]any)
		om, overMap := o.(map[string]any)
		if isMap && overMap {
			out[k] = withoutReplaced(xm, om)
		}
	}
	return out
}

// valuesFile reads one valuesFiles entry of the bundle, from inside the repository only, and templates it.
func valuesFile(root, bundlePath, f string, pre bool, c fleet.ClusterInfo) (map[string]any, error) {
	fleetFile := path.Join(bundlePath, "fleet.yaml")
	rel := path.Join(bundlePath, f)
	if path.IsAbs(f) {
		rel = f
	}
	data, err := safepath.ReadFile(repoRoot(root), rel)
	if err != nil {
		var esc *safepath.EscapeError
		if errors.As(err, &esc) {
			return nil, fmt.Errorf("%s: valuesFiles %q %s", fleetFile, f, esc.Reason)
		}
		return nil, fmt.Errorf("%s: valuesFiles %q: %w", fleetFile, f, err)
	}
	if len(data) > MaxValuesFile {
		// Parsing YAML allocates a hundred times its size; a values file this large is a mistake or an attack.
		return nil, &TemplateError{Source: path.Clean(rel), Err: fmt.Errorf("%d bytes is over the %s limit of a values file", len(data), mib(MaxValuesFile))}
	}
	var fileValues map[string]any
	if pre {
		return renderYAML(path.Clean(rel), string(data), c)
	} else if d := duplicateKey(data); d != nil {
		return nil, &TemplateError{Source: path.Clean(rel), Err: d}
	} else if err := yaml.Unmarshal(data, &fileValues); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return fileValues, nil
}

func repoRoot(root string) string { return root }

// legacyLabels implements Fleet's older substitution: a string value "global.fleet.clusterLabels.<label>"
// becomes that label's value. It substitutes in a copy: with disablePreProcess, v shares its maps with
// the caller's helm.values, and the next cluster's render must not see this one's labels.
func legacyLabels(v map[string]any, labels map[string]string) map[string]any {
	const prefix = "global.fleet.clusterLabels."
	if v == nil {
		return nil
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			out := make(map[string]any, len(t))
			for k, e := range t {
				out[k] = walk(e)
			}
			return out
		case []any:
			out := make([]any, len(t))
			for i, e := range t {
				out[i] = walk(e)
			}
			return out
		case string:
			if strings.HasPrefix(t, prefix) {
				return labels[strings.TrimPrefix(t, prefix)]
			}
		}
		return x
	}
	return walk(v).(map[string]any)
}
