package activities

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
)

// summarizeObjects counts a release's objects by state, with at most ten short non-ready entries, worst first.
func summarizeObjects(objs []agentclient.ObjectStatus) api.ResourceSummary {
	s := api.ResourceSummary{Checked: true}
	rank := map[string]int{"missing": 0, "modified": 1, "orphaned": 2, "notReady": 3, "unknown": 4}
	var bad []agentclient.ObjectStatus
	for _, o := range objs {
		if o.State == agentclient.StateOrphaned {
			s.Counts.Orphaned++ // not desired, so not part of desiredReady
			bad = append(bad, o)
			continue
		}
		s.Counts.DesiredReady++
		switch o.State {
		case "ready":
			s.Counts.Ready++
			continue
		case "notReady":
			s.Counts.NotReady++
		case "missing":
			s.Counts.Missing++
		case "modified":
			s.Counts.Modified++
		default:
			s.Counts.Unknown++
		}
		bad = append(bad, o)
	}
	// Worst first; one example of every state before a second of any, so ten missing objects never hide
	// the one that is not ready; at most maxNonReady entries, then a count of the rest.
	sort.SliceStable(bad, func(i, j int) bool { return rank[bad[i].State] < rank[bad[j].State] })
	picked := make([]bool, len(bad))
	n := 0
	for i, o := range bad {
		if n < maxNonReady && (i == 0 || bad[i-1].State != o.State) {
			picked[i], n = true, n+1
		}
	}
	for i := range bad {
		if n < maxNonReady && !picked[i] {
			picked[i], n = true, n+1
		}
	}
	for i, o := range bad {
		if !picked[i] {
			continue
		}
		entry := fmt.Sprintf("%s %s %s", strings.ToLower(o.Ref.Kind), objectName(o.Ref), o.State)
		if o.Message != "" && o.State != "missing" && o.State != "orphaned" {
			entry += ": " + o.Message
		}
		s.NonReady = append(s.NonReady, entry)
	}
	if rest := len(bad) - n; rest > 0 {
		s.NonReady = append(s.NonReady, fmt.Sprintf("and %d more", rest))
	}
	return s
}

// maxNonReady bounds the objects named in a bundle's message.
const maxNonReady = 10

func objectName(r agentclient.ObjectRef) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}
