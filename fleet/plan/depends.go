package plan

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// Labels Fleet gives every bundle deployment beside its fleet.yaml labels; a dependsOn selector may match
// them as it does in Fleet.
const (
	LabelRepoName        = "fleet.cattle.io/repo-name"
	LabelBundleName      = "fleet.cattle.io/bundle-name"
	LabelBundleNamespace = "fleet.cattle.io/bundle-namespace"
)

// Dependency is one dependsOn entry of a bundle, resolved against the bundles of its GitRepo.
type Dependency struct {
	// Name and Selector are the entry as written (Selector in kubectl's form: tier=db,env in (prod)).
	Name     string
	Selector string
	// Bundles are the GitRepo's bundles the entry matches, sorted: the one called Name, and those whose
	// labels match Selector (both set: the one called Name if its labels match).
	Bundles        []string
	AcceptedStates []string
}

// Dependencies is one bundle's dependsOn, resolved. Err is set when the bundle is part of a dependsOn
// cycle: it can never be applied, and the error names the cycle from it back to it.
type Dependencies struct {
	DependsOn []Dependency
	Err       error
}

// ResolveDependsOn resolves the dependsOn of every bundle of a GitRepo in workspace namespace, in the
// order of bundles. Only the GitRepo's own bundles are matched. A name is a bundle's name, Fleet's (its
// fleet.yaml name, else derived from the GitRepo's name and its path), which is Flotilla's too. A bundle
// whose fleet.yaml does not load has unknown labels: a selector is taken to match it, so that nothing
// that might depend on it goes ahead before it loads; its own dependsOn is unknown and resolves to none.
func ResolveDependsOn(bundles []Bundle, gitRepo, namespace string) []Dependencies {
	out := make([]Dependencies, len(bundles))
	for i, b := range bundles {
		if b.Bundle == nil {
			continue
		}
		for _, d := range b.Bundle.FleetYAML.DependsOn {
			out[i].DependsOn = append(out[i].DependsOn, resolve(d, bundles, gitRepo, namespace))
		}
	}
	index := make(map[string]int, len(bundles))
	for i, b := range bundles {
		index[b.Ref.Name] = i
	}
	for i := range bundles {
		if cycle := cycleThrough(i, bundles, out, index); cycle != nil {
			out[i].Err = fmt.Errorf("dependsOn cycle: %s", strings.Join(cycle, " → "))
		}
	}
	return out
}

func resolve(d fleet.Dependency, bundles []Bundle, gitRepo, namespace string) Dependency {
	r := Dependency{Name: d.Name, AcceptedStates: d.AcceptedStates}
	var sel labels.Selector
	if d.Selector != nil {
		// Checked when fleet.yaml loaded; a selector that does not parse here matches nothing.
		sel, _ = metav1.LabelSelectorAsSelector(d.Selector)
		r.Selector = "{}"
		if sel != nil && sel.String() != "" {
			r.Selector = sel.String()
		}
	}
	for _, b := range bundles {
		if d.Name != "" && b.Ref.Name != d.Name {
			continue
		}
		if d.Selector != nil && (sel == nil || b.Bundle != nil && !sel.Matches(labels.Set(labelsOf(b, gitRepo, namespace)))) {
			continue
		}
		r.Bundles = append(r.Bundles, b.Ref.Name)
	}
	sort.Strings(r.Bundles)
	return r
}

// labelsOf are the labels a dependsOn selector sees on a bundle: its fleet.yaml labels and Fleet's own.
func labelsOf(b Bundle, gitRepo, namespace string) map[string]string {
	l := map[string]string{}
	for k, v := range b.Bundle.FleetYAML.Labels {
		l[k] = v
	}
	l[LabelRepoName], l[LabelBundleName], l[LabelBundleNamespace] = gitRepo, b.Ref.Name, fleet.Workspace(namespace)
	return l
}

// cycleThrough is the shortest dependsOn path from bundle i back to itself (its name first and last), or
// nil when there is none. Ties go to the dependency that sorts first, so the message is stable.
func cycleThrough(i int, bundles []Bundle, deps []Dependencies, index map[string]int) []string {
	next := func(j int) []int {
		var out []int
		for _, d := range deps[j].DependsOn {
			for _, name := range d.Bundles {
				out = append(out, index[name])
			}
		}
		sort.Slice(out, func(a, b int) bool { return bundles[out[a]].Ref.Name < bundles[out[b]].Ref.Name })
		return out
	}
	from := map[int]int{}
	queue := []int{i}
	for len(queue) > 0 {
		j := queue[0]
		queue = queue[1:]
		for _, k := range next(j) {
			if _, seen := from[k]; seen {
				continue
			}
			from[k] = j
			if k == i {
				path := []string{bundles[i].Ref.Name}
				for at := j; at != i; at = from[at] {
					path = append(path, bundles[at].Ref.Name)
				}
				path = append(path, bundles[i].Ref.Name)
				// Walked backwards from the end: the bundle, then what it depends on, ..., then it again.
				for a, b := 1, len(path)-2; a < b; a, b = a+1, b-1 {
					path[a], path[b] = path[b], path[a]
				}
				return path
			}
			queue = append(queue, k)
		}
	}
	return nil
}
