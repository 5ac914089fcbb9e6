package target

import (
	"encoding/json"
	"strings"

	"github.com/flotilla-gitops/flotilla/fleet"
)

func deepCopy(o fleet.BundleDeploymentOptions) (fleet.BundleDeploymentOptions, error) {
	var out fleet.BundleDeploymentOptions
	b, err := json.Marshal(o)
	if err != nil {
		return out, err
	}
	return out, json.Unmarshal(b, &out)
}

func or(a, b string) string {
	if b != "" {
		return b
	}
	return a
}

func merge(base, over fleet.BundleDeploymentOptions) fleet.BundleDeploymentOptions {
	out := base
	out.DefaultNamespace = or(base.DefaultNamespace, over.DefaultNamespace)
	out.TargetNamespace = or(base.TargetNamespace, over.TargetNamespace)
	out.ServiceAccount = or(base.ServiceAccount, over.ServiceAccount)
	out.KeepResources = base.KeepResources || over.KeepResources
	out.DeleteCRDResources = base.DeleteCRDResources || over.DeleteCRDResources
	if over.ForceSyncGeneration != 0 {
		out.ForceSyncGeneration = over.ForceSyncGeneration
	}
	if over.CorrectDrift != nil {
		out.CorrectDrift = over.CorrectDrift
	}
	out.NamespaceLabels = mergeStrings(base.NamespaceLabels, over.NamespaceLabels)
	out.NamespaceAnnotations = mergeStrings(base.NamespaceAnnotations, over.NamespaceAnnotations)
	if over.Helm != nil {
		if base.Helm == nil {
			out.Helm = over.Helm
		} else {
			h := *base.Helm
			o := over.Helm
			h.Chart, h.Repo, h.Version, h.ReleaseName = or(h.Chart, o.Chart), or(h.Repo, o.Repo), or(h.Version, o.Version), or(h.ReleaseName, o.ReleaseName)
			h.Values = MergeValues(h.Values, o.Values)
			if len(o.ValuesFiles) > 0 {
				h.ValuesFiles = append(append([]string(nil), h.ValuesFiles...), o.ValuesFiles...)
			}
			h.TemplateValues = mergeStrings(h.TemplateValues, o.TemplateValues)
			h.ValuesFrom = mergeByKey(h.ValuesFrom, o.ValuesFrom, valuesFromKey)
			if o.TimeoutSeconds > 0 {
				h.TimeoutSeconds = o.TimeoutSeconds
			}
			if o.MaxHistory > 0 {
				h.MaxHistory = o.MaxHistory
			}
			h.Force, h.TakeOwnership, h.Atomic = h.Force || o.Force, h.TakeOwnership || o.TakeOwnership, h.Atomic || o.Atomic
			h.WaitForJobs, h.DisablePreProcess = h.WaitForJobs || o.WaitForJobs, h.DisablePreProcess || o.DisablePreProcess
			h.SkipSchemaValidation = h.SkipSchemaValidation || o.SkipSchemaValidation
			out.Helm = &h
		}
	}
	if over.Kustomize != nil && over.Kustomize.Dir != "" {
		out.Kustomize = over.Kustomize
	}
	if over.YAML != nil {
		y := fleet.YAMLOptions{}
		if base.YAML != nil {
			y.Overlays = append(y.Overlays, base.YAML.Overlays...)
		}
		y.Overlays = append(y.Overlays, over.YAML.Overlays...)
		out.YAML = &y
	}
	if over.Diff != nil {
		d := fleet.DiffOptions{}
		if base.Diff != nil {
			d.ComparePatches = base.Diff.ComparePatches
		}
		d.ComparePatches = mergeComparePatches(d.ComparePatches, over.Diff.ComparePatches)
		out.Diff = &d
	}
	out.Ignore.Conditions = append(append([]map[string]string(nil), base.Ignore.Conditions...), over.Ignore.Conditions...)
	return out
}

func mergeStrings(a, b map[string]string) map[string]string {
	if len(a) == 0 && len(b) == 0 {
		return a
	}
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// MergeValues deep-merges b over a: maps merge key by key, anything else (lists included) is replaced.
func MergeValues(a, b map[string]any) map[string]any {
	if a == nil && b == nil {
		return nil
	}
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = MergeValues(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// mergeComparePatches merges by the object a patch names, as Fleet does: a customization's patch for an
// object the root already patches replaces that patch where it stands; one for another object is appended.
// Of two customization patches for one object, the first counts.
func mergeComparePatches(base, over []fleet.ComparePatch) []fleet.ComparePatch {
	id := func(p fleet.ComparePatch) string {
		return strings.Join([]string{p.APIVersion, p.Kind, p.Namespace, p.Name}, "|")
	}
	return mergeByKey(base, over, id)
}

// valuesFromKey is Fleet's identity of a valuesFrom entry (options.valuesFromKey): its ConfigMap's
// reference, else its Secret's, as written; an entry naming neither has none and is always appended.
func valuesFromKey(v fleet.ValuesFrom) string {
	if r := v.ConfigMapKeyRef; r != nil {
		return strings.Join([]string{"configmap", r.Namespace, r.Name, r.Key}, "|")
	}
	if r := v.SecretKeyRef; r != nil {
		return strings.Join([]string{"secret", r.Namespace, r.Name, r.Key}, "|")
	}
	return ""
}

// mergeByKey merges over into base by identity, as Fleet's merge.ByKey: an entry of over whose key base
// has replaces base's where it stands, any other is appended; of two entries of over with one key the
// first counts; an entry without a key is always appended.
func mergeByKey[T any](base, over []T, key func(T) string) []T {
	if len(over) == 0 {
		return base
	}
	at := map[string]int{}
	for i, v := range base {
		if k := key(v); k != "" {
			at[k] = i
		}
	}
	out := append([]T(nil), base...)
	seen := map[string]bool{}
	for _, v := range over {
		k := key(v)
		if k != "" {
			if seen[k] {
				continue
			}
			seen[k] = true
			if i, ok := at[k]; ok {
				out[i] = v
				continue
			}
		}
		out = append(out, v)
	}
	return out
}
