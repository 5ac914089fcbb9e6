package agentclient

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// CheckOptions are a bundle's rules for what a check must not report: Fleet's diff.comparePatches
// (known differences, or whole objects, to leave out of drift detection) and ignore.conditions (status
// conditions to drop before readiness is judged).
type CheckOptions struct {
	ComparePatches   []fleet.ComparePatch
	IgnoreConditions []map[string]string
}

// normalizer is CheckOptions applied to one object.
type normalizer struct {
	ignored    bool     // op: ignore — neither missing nor modified is reported
	removed    []string // JSON pointers left out of the comparison
	conditions []map[string]string
}

func (o CheckOptions) forObject(ref ObjectRef) normalizer {
	n := normalizer{conditions: o.IgnoreConditions}
	for _, p := range o.ComparePatches {
		if !patchMatches(p, ref) {
			continue
		}
		n.removed = append(n.removed, p.JSONPointers...)
		for _, op := range p.Operations {
			switch op.Op {
			case "ignore":
				n.ignored = true
			case "remove":
				n.removed = append(n.removed, op.Path)
			}
		}
	}
	return n
}

// patchMatches follows Fleet: every field the patch sets must match; the name may be a regular expression
// (anchored), so a patch with only a namespace, or only a kind, covers many objects.
func patchMatches(p fleet.ComparePatch, ref ObjectRef) bool {
	if p.APIVersion != "" && p.APIVersion != ref.APIVersion ||
		p.Kind != "" && p.Kind != ref.Kind ||
		p.Namespace != "" && p.Namespace != ref.Namespace {
		return false
	}
	if p.Name == "" || p.Name == ref.Name {
		return true
	}
	re, err := regexp.Compile("^(?:" + p.Name + ")$")
	return err == nil && re.MatchString(ref.Name)
}

// forDiff returns copies of desired and live without the removed paths; the inputs are left untouched.
func (n normalizer) forDiff(desired, live map[string]any) (map[string]any, map[string]any) {
	if len(n.removed) == 0 {
		return desired, live
	}
	d, l := runtime.DeepCopyJSON(desired), runtime.DeepCopyJSON(live)
	for _, p := range n.removed {
		removePointer(d, p)
		removePointer(l, p)
	}
	return d, l
}

// forReadiness returns the live object without the status conditions that match an ignore rule.
func (n normalizer) forReadiness(live *unstructured.Unstructured) *unstructured.Unstructured {
	if len(n.conditions) == 0 {
		return live
	}
	conds, found, err := unstructured.NestedSlice(live.Object, "status", "conditions")
	if !found || err != nil {
		return live
	}
	kept := make([]any, 0, len(conds))
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && anyConditionRuleMatches(n.conditions, m) {
			continue
		}
		kept = append(kept, c)
	}
	if len(kept) == len(conds) {
		return live
	}
	out := live.DeepCopy()
	_ = unstructured.SetNestedSlice(out.Object, kept, "status", "conditions")
	return out
}

// anyConditionRuleMatches: a rule matches a condition when every key/value of the rule is in it.
func anyConditionRuleMatches(rules []map[string]string, cond map[string]any) bool {
	for _, rule := range rules {
		if len(rule) == 0 {
			continue
		}
		all := true
		for k, v := range rule {
			if fmt.Sprint(cond[k]) != v {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// removePointer deletes the value at an RFC 6901 JSON pointer, if present. A pointer that does not
// resolve changes nothing.
func removePointer(obj map[string]any, pointer string) {
	if pointer == "" || pointer[0] != '/' {
		return
	}
	tokens := strings.Split(pointer[1:], "/")
	for i := range tokens {
		tokens[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(tokens[i])
	}
	removeAt(obj, tokens)
}

// removeAt returns v without the value at tokens.
func removeAt(v any, tokens []string) any {
	tok, rest := tokens[0], tokens[1:]
	switch c := v.(type) {
	case map[string]any:
		child, ok := c[tok]
		if !ok {
			return v
		}
		if len(rest) == 0 {
			delete(c, tok)
		} else {
			c[tok] = removeAt(child, rest)
		}
		return c
	case []any:
		idx, err := strconv.Atoi(tok)
		if err != nil || idx < 0 || idx >= len(c) {
			return v
		}
		if len(rest) == 0 {
			return append(c[:idx:idx], c[idx+1:]...)
		}
		c[idx] = removeAt(c[idx], rest)
		return c
	}
	return v
}
