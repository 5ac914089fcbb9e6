package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/target"
	"github.com/flotilla-gitops/flotilla/fleet/tmpl"
)

// DefaultValuesKey is the key of a valuesFrom ConfigMap or Secret read when the reference names none, as
// in Fleet (helmdeployer.DefaultKey).
const DefaultValuesKey = "values.yaml"

// ValuesSource is one key of a ConfigMap or Secret on the target cluster that a bundle takes Helm values
// from (helm.valuesFrom), with Fleet's defaults applied: the release's namespace, the key values.yaml.
type ValuesSource struct {
	Secret    bool   `json:"secret,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Key       string `json:"key"`
}

func (s ValuesSource) String() string {
	return fmt.Sprintf("%s %q key %q", s.kind(), s.Namespace+"/"+s.Name, s.Key)
}

func (s ValuesSource) kind() string {
	if s.Secret {
		return "secret"
	}
	return "configmap"
}

// ValuesFromError is a valuesFrom source that cannot be used on one cluster: missing, unreadable, or not
// Helm values. It never holds any of the source's content.
type ValuesFromError struct {
	Source ValuesSource
	Reason string
}

func (e *ValuesFromError) Error() string { return "valuesFrom " + e.Source.String() + ": " + e.Reason }

// valuesSources resolves a bundle's helm.valuesFrom for a release in namespace ns, each entry's ConfigMap
// before its Secret, as Fleet's agent reads them. confine, when set, is the only namespace they may come
// from: a GitRepo's targetNamespace or a cluster's confineToNamespace keeps a repository out of the
// cluster's other namespaces, for reading as for writing.
func valuesSources(from []fleet.ValuesFrom, ns, confine string) ([]ValuesSource, error) {
	var out []ValuesSource
	for i, v := range from {
		if v.ConfigMapKeyRef == nil && v.SecretKeyRef == nil {
			return nil, fmt.Errorf("helm.valuesFrom[%d]: names neither a configMapKeyRef nor a secretKeyRef", i)
		}
		for _, ref := range []struct {
			secret bool
			field  string
			r      *fleet.ValuesKeyRef
		}{{false, "configMapKeyRef", v.ConfigMapKeyRef}, {true, "secretKeyRef", v.SecretKeyRef}} {
			if ref.r == nil {
				continue
			}
			if ref.r.Name == "" {
				return nil, fmt.Errorf("helm.valuesFrom[%d].%s: name is required", i, ref.field)
			}
			src := ValuesSource{Secret: ref.secret, Namespace: firstNonEmpty(ref.r.Namespace, ns), Name: ref.r.Name,
				Key: firstNonEmpty(ref.r.Key, DefaultValuesKey)}
			if confine != "" && src.Namespace != confine {
				return nil, &ValuesFromError{Source: src, Reason: fmt.Sprintf(
					"namespace %q is outside namespace %q, the only one this bundle may read or write on this cluster", src.Namespace, confine)}
			}
			out = append(out, src)
		}
	}
	return out, nil
}

// LoadedValues is what one valuesFrom source holds on the cluster, as the cluster's activity read it.
type LoadedValues struct {
	Source ValuesSource
	// UID is the object's UID. It salts the source's part of the deployment ID, which leaves the activity:
	// without it, someone reading workflow history could test guesses of a Secret's content against the ID.
	UID  string
	Data []byte
}

// WithValuesFrom returns the rendering with the values of its valuesFrom sources, as read on the cluster
// (loaded, in the order of rel.ValuesFrom), merged over its own in order, as Fleet's agent merges them
// over everything else; and with a deployment ID that also covers the sources, so that a changed source
// is a new deployment. The sources are never templated. rel itself is not changed.
func (rel *Release) WithValuesFrom(loaded []LoadedValues) (*Release, error) {
	if len(rel.ValuesFrom) == 0 {
		return rel, nil
	}
	if len(loaded) != len(rel.ValuesFrom) {
		return nil, fmt.Errorf("bundle %q: %d valuesFrom sources read for %d named", rel.Bundle, len(loaded), len(rel.ValuesFrom))
	}
	out := *rel
	out.secretStrings = nil
	h := sha256.New()
	h.Write([]byte(rel.DeploymentID))
	for _, l := range loaded {
		s := l.Source
		fmt.Fprintf(h, "\x00valuesFrom\x00%t\x00%s\x00%s\x00%s\x00%s\x00%d\x00", s.Secret, s.Namespace, s.Name, s.Key, l.UID, len(l.Data))
		h.Write(l.Data)
		values, err := parseSourceValues(l)
		if err != nil {
			return nil, fmt.Errorf("bundle %q: %w", rel.Bundle, err)
		}
		out.Values = target.MergeValues(out.Values, values)
		if s.Secret {
			out.secretStrings = appendLeaves(out.secretStrings, values)
		}
	}
	// Longest first, so that a value containing another is redacted whole.
	sort.Slice(out.secretStrings, func(i, j int) bool { return len(out.secretStrings[i]) > len(out.secretStrings[j]) })
	out.DeploymentID = "s-" + hex.EncodeToString(h.Sum(nil))[:40]
	return &out, nil
}

var yamlLine = regexp.MustCompile(`line \d+`)

// parseSourceValues reads a source's YAML. The parser's message may quote the text it failed on, which
// from a Secret is a credential: only its line is kept.
func parseSourceValues(l LoadedValues) (map[string]any, error) {
	if len(l.Data) > tmpl.MaxValuesFile {
		return nil, &ValuesFromError{Source: l.Source, Reason: fmt.Sprintf("%d bytes is over the %d MiB limit of Helm values", len(l.Data), tmpl.MaxValuesFile>>20)}
	}
	var values map[string]any
	if err := yaml.Unmarshal(l.Data, &values); err != nil {
		reason := "not a YAML map of Helm values"
		if !l.Source.Secret {
			reason += ": " + strings.TrimPrefix(err.Error(), "error unmarshaling JSON: ")
		} else if line := yamlLine.FindString(err.Error()); line != "" {
			reason += " (" + line + ")"
		}
		return nil, &ValuesFromError{Source: l.Source, Reason: reason}
	}
	return values, nil
}

// minRedacted is the shortest Secret value Redact replaces: shorter ones ("on", "1") would blank out
// ordinary words of a message and hide nothing worth hiding.
const minRedacted = 4

// appendLeaves appends the scalar values of v, as text, that are long enough to be worth redacting.
func appendLeaves(out []string, v any) []string {
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			out = appendLeaves(out, e)
		}
	case []any:
		for _, e := range t {
			out = appendLeaves(out, e)
		}
	case nil, bool:
	default:
		if s := fmt.Sprint(t); len(s) >= minRedacted {
			out = append(out, s)
		}
	}
	return out
}

// Redact replaces, in a message about this release (a Helm or API server error, which may quote what
// a template made of the values), every value taken from a valuesFrom Secret: such messages become status.
func (rel *Release) Redact(msg string) string {
	for _, s := range rel.secretStrings {
		msg = strings.ReplaceAll(msg, s, "[redacted]")
	}
	return msg
}
