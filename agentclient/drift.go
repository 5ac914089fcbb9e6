package agentclient

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// driftPaths lists, as dotted paths, the fields set in the manifest object desired whose value in the live
// object differs. It is a pure function.
//
// Only what the manifest sets is compared, so apiserver defaults, fields set by controllers or
// admission, status and server-managed metadata never count as drift. Rules that keep defaults quiet:
//   - of metadata, only labels and annotations are compared; status is never compared;
//   - a manifest null, "", {} or [] means "not set" (typed Go encoding would drop it too);
//   - a manifest false or 0 equals an absent live field (omitempty drops them on the server side);
//   - numbers compare by value (1 == 1.0), and quantities by amount ("0.5" == "500m", "1024Mi" == "1Gi");
//   - lists of objects match elements by name (or containerPort, port, mountPath, when unique) and else by
//     index; extra live elements are not drift (admission adds some); lists of scalars must be equal;
//   - a Secret's stringData is compared as the data the apiserver turns it into.
func driftPaths(desired, live map[string]any) []string {
	fields := driftFields(desired, live)
	paths := make([]string, len(fields))
	for i, f := range fields {
		paths[i] = f.Path
	}
	return paths
}

// FieldChange is one field the manifest sets that live has otherwise: the manifest's value and the live one
// (nil when absent). A field the apply removes has no desired value.
type FieldChange struct {
	Path          string
	Desired, Live any
}

// driftFields is driftPaths with each field's two values, sorted by path.
func driftFields(desired, live map[string]any) []FieldChange {
	d := &differ{}
	desired = secretStringDataAsData(desired)
	for k, want := range desired {
		switch k {
		case "apiVersion", "kind", "status":
		case "metadata":
			wm, _ := want.(map[string]any)
			lm, _ := live["metadata"].(map[string]any)
			for _, f := range []string{"labels", "annotations"} {
				d.compare("metadata."+f, f, wm[f], lm[f])
			}
		default:
			d.compare(k, k, want, live[k])
		}
	}
	slices.SortFunc(d.fields, func(a, b FieldChange) int { return strings.Compare(a.Path, b.Path) })
	return d.fields
}

type differ struct{ fields []FieldChange }

func (d *differ) report(path string, want, have any) {
	d.fields = append(d.fields, FieldChange{Path: path, Desired: want, Live: have})
}

// compare records path when want (from the manifest) is not matched by have (live, nil when absent).
func (d *differ) compare(path, key string, want, have any) {
	switch w := want.(type) {
	case nil:
	case map[string]any:
		if len(w) == 0 {
			return
		}
		h, ok := have.(map[string]any)
		if !ok && have != nil {
			d.report(path, want, have)
			return
		}
		for k, wv := range w {
			childKey := k
			if quantityMaps[key] {
				childKey = quantityKey
			}
			d.compare(path+"."+k, childKey, wv, h[k])
		}
	case []any:
		if len(w) == 0 {
			return
		}
		h, ok := have.([]any)
		if !ok && have != nil {
			d.report(path, want, have)
			return
		}
		d.compareList(path, key, w, h)
	default:
		if !scalarMatches(key, want, have) {
			d.report(path, want, have)
		}
	}
}

var listMergeKeys = []string{"name", "containerPort", "port", "mountPath"}

func (d *differ) compareList(path, key string, want, have []any) {
	if !allMaps(want) {
		if len(want) != len(have) {
			d.report(path, want, listOrNil(have))
			return
		}
		for i := range want {
			if !scalarMatches(key, want[i], have[i]) && !reflect.DeepEqual(want[i], have[i]) {
				d.report(path, want, have)
				return
			}
		}
		return
	}
	if mk := mergeKey(want); mk != "" {
		for _, w := range want {
			wm := w.(map[string]any)
			id := fmt.Sprint(wm[mk])
			elemPath := fmt.Sprintf("%s[%s=%s]", path, mk, id)
			var match any
			for _, h := range have {
				if hm, ok := h.(map[string]any); ok && scalarMatches(mk, wm[mk], hm[mk]) {
					match = hm
					break
				}
			}
			if match == nil {
				d.report(elemPath, w, nil)
				continue
			}
			d.compare(elemPath, key, w, match)
		}
		return
	}
	for i, w := range want {
		var h any
		if i < len(have) {
			h = have[i]
		}
		d.compare(fmt.Sprintf("%s[%d]", path, i), key, w, h)
	}
}

// listOrNil keeps an absent live list absent (nil any) rather than a typed nil slice.
func listOrNil(l []any) any {
	if l == nil {
		return nil
	}
	return l
}

func allMaps(l []any) bool {
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// mergeKey is the first of listMergeKeys that every element sets to a distinct scalar.
func mergeKey(l []any) string {
next:
	for _, k := range listMergeKeys {
		seen := map[string]bool{}
		for _, e := range l {
			v, ok := e.(map[string]any)[k]
			if !ok || v == nil {
				continue next
			}
			switch v.(type) {
			case map[string]any, []any:
				continue next
			}
			id := fmt.Sprint(v)
			if seen[id] {
				continue next
			}
			seen[id] = true
		}
		return k
	}
	return ""
}

// quantityMaps are the keys of maps whose values are resource quantities; their values are compared
// under quantityKey.
var quantityMaps = map[string]bool{"limits": true, "requests": true, "hard": true, "capacity": true, "allocatable": true}

const quantityKey = "\x00quantity"

func scalarMatches(key string, want, have any) bool {
	switch w := want.(type) {
	case string:
		if w == "" {
			return true
		}
		if h, ok := have.(string); ok && h == w {
			return true
		}
		return key == quantityKey && quantitiesEqual(want, have)
	case bool:
		if have == nil {
			return !w
		}
		h, ok := have.(bool)
		return ok && h == w
	}
	if wf, ok := toFloat(want); ok {
		if have == nil {
			return wf == 0
		}
		if hf, ok := toFloat(have); ok {
			return wf == hf
		}
		return quantitiesEqual(want, have)
	}
	return reflect.DeepEqual(want, have)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}

func quantitiesEqual(a, b any) bool {
	qa, okA := asQuantity(a)
	qb, okB := asQuantity(b)
	return okA && okB && qa.Cmp(qb) == 0
}

func asQuantity(v any) (resource.Quantity, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int64, int, int32, float64, float32:
		s = fmt.Sprint(x)
	default:
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	return q, err == nil
}

// secretStringDataAsData folds a v1 Secret's stringData into data, base64-encoded, as the apiserver does.
func secretStringDataAsData(obj map[string]any) map[string]any {
	sd, ok := obj["stringData"].(map[string]any)
	if !ok || obj["kind"] != "Secret" || obj["apiVersion"] != "v1" {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	data := map[string]any{}
	if d, ok := obj["data"].(map[string]any); ok {
		for k, v := range d {
			data[k] = v
		}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	out["data"] = data
	delete(out, "stringData")
	return out
}
