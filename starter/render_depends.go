package main

import (
	"fmt"
	"strings"

	"github.com/flotilla-gitops/flotilla/fleet/plan"
)

// dependsOnResult is one dependsOn entry of a bundle as the worker resolves it. JSON names are a contract
// (`render -o json`).
type dependsOnResult struct {
	Name     string `json:"name,omitempty"`
	Selector string `json:"selector,omitempty"`
	// Bundles are the GitRepo's bundles the entry matches.
	Bundles []string `json:"bundles"`
	// AcceptedStates are the states each of them must be in on the cluster (Ready when fleet.yaml names none).
	AcceptedStates []string `json:"acceptedStates"`
	// Waits says why the bundle waits on this cluster whatever the states: nothing the entry matches is
	// deployed here.
	Waits string `json:"waits,omitempty"`
}

// withDependsOn adds to each bundle of a cluster's results what it depends on, and fails a bundle on a
// dependsOn cycle, which the worker never applies. A preview reads no cluster, so it cannot say whether a
// dependency is ready; it says which never can be here.
func withDependsOn(res *clusterResult, bundles []plan.Bundle, deps []plan.Dependencies) {
	byName := map[string]plan.Dependencies{}
	for i, b := range bundles {
		byName[b.Ref.Name] = deps[i]
	}
	here := map[string]bool{}
	for _, b := range res.Bundles {
		here[b.Bundle] = b.Skipped == ""
	}
	for i := range res.Bundles {
		b := &res.Bundles[i]
		d := byName[b.Bundle]
		if d.Err != nil && b.Error == "" {
			b.Error, b.Objects, b.manifest = fmt.Sprintf("bundle %q: %v", b.Bundle, d.Err), nil, nil
		}
		for _, entry := range d.DependsOn {
			r := dependsOnResult{Name: entry.Name, Selector: entry.Selector, Bundles: entry.Bundles, AcceptedStates: entry.AcceptedStates}
			if r.Bundles == nil {
				r.Bundles = []string{}
			}
			if len(r.AcceptedStates) == 0 {
				r.AcceptedStates = []string{"Ready"}
			}
			found := false
			for _, name := range entry.Bundles {
				found = found || here[name]
			}
			switch {
			case len(entry.Bundles) == 0:
				r.Waits = "no bundle of this GitRepo"
			case !found:
				r.Waits = "not deployed to this cluster"
			}
			b.DependsOn = append(b.DependsOn, r)
		}
	}
}

// dependsOnLine is the `# Depends on:` header of a bundle's objects.
func dependsOnLine(deps []dependsOnResult) string {
	parts := make([]string, len(deps))
	for i, d := range deps {
		var what string
		switch {
		case d.Selector == "":
			what = fmt.Sprintf("%q", d.Name)
		case d.Name == "":
			what = fmt.Sprintf("matching %s: %s", d.Selector, quoted(d.Bundles))
		default:
			what = fmt.Sprintf("%q matching %s", d.Name, d.Selector)
		}
		states := strings.Join(d.AcceptedStates, " or ")
		if d.Waits != "" {
			parts[i] = fmt.Sprintf("%s (%s; waits: %s)", what, states, d.Waits)
			continue
		}
		parts[i] = fmt.Sprintf("%s (%s)", what, states)
	}
	return strings.Join(parts, ", ")
}

func quoted(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
