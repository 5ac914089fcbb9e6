package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/flotilla-gitops/flotilla/api"
)

// statusAnswerLimit bounds a status query's answer: Temporal refuses one over 2 MB, and half of a limit
// is the margin kept. A GitRepo of 1,000 clusters of ten bundles has 3.2 MB of status (ADR 34).
const statusAnswerLimit = 1 << 20

// boundedStatus is st, or, when it would not fit in limit bytes, st with its clusters' bundle details
// left out (their states and counts stay), then with only as many clusters as fit; Partial says which, and
// how to see the rest (QueryStatusPage).
func boundedStatus(st api.GitRepoStatus, limit int) api.GitRepoStatus {
	size := encodedSize(st)
	if size <= limit {
		return st
	}
	whole := size
	clusters := make([]api.ClusterStatus, len(st.Clusters))
	for i, c := range st.Clusters {
		c.Bundles = nil
		clusters[i] = c
	}
	sortClusters(clusters)
	st.Clusters = clusters
	st.Partial = fmt.Sprintf("the whole status is %d KB, more than one answer carries: bundle details are left out "+
		"(flotilla status %s --cluster NAME, --state STATE or --limit N shows them)", whole>>10, st.Name)
	if size = encodedSize(st); size <= limit {
		return st
	}
	for i := range st.Clusters {
		st.Clusters[i].Message = cutMessage(st.Clusters[i].Message, shortMessage)
	}
	st.Partial += "; long cluster messages are cut"
	if size = encodedSize(st); size <= limit {
		return st
	}
	// Clusters cost about the same each: start from the share that fits, and shrink until it does.
	all, note := st.Clusters, st.Partial
	for keep := len(all) * (limit - 4096) / size; ; keep = keep * 9 / 10 {
		keep = max(min(keep, len(all)-1), 0)
		st.Clusters, st.Next = all[:keep], ""
		if keep > 0 {
			st.Next = all[keep-1].Name
		}
		st.Partial = note + fmt.Sprintf("; only the first %d of %d clusters are listed", keep, len(all))
		if keep == 0 || encodedSize(st) <= limit {
			return st
		}
	}
}

// shortMessage is what a cluster's message is cut to in an answer too large to carry it whole.
const shortMessage = 160

// cutMessage is msg cut to at most n bytes on a rune boundary, marked as cut.
func cutMessage(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

// statusPage is st with only the clusters in selects, in full.
func statusPage(st api.GitRepoStatus, in api.StatusPageInput) api.GitRepoStatus {
	limit := in.Limit
	if limit <= 0 {
		limit = api.DefaultStatusPage
	}
	limit = min(limit, api.MaxStatusPage)
	var page []api.ClusterStatus
	st.Next = ""
	all := append([]api.ClusterStatus(nil), st.Clusters...)
	sortClusters(all)
	for _, c := range all {
		if in.Cluster != "" && c.Name != in.Cluster || in.State != "" && c.State != in.State || in.After != "" && c.Name <= in.After {
			continue
		}
		if len(page) == limit {
			st.Next = page[len(page)-1].Name
			break
		}
		page = append(page, c)
	}
	if page == nil {
		page = []api.ClusterStatus{}
	}
	st.Clusters = page
	return st
}

// sortClusters orders clusters by name, the order pages follow (After, Next).
func sortClusters(cs []api.ClusterStatus) {
	slices.SortFunc(cs, func(a, b api.ClusterStatus) int { return strings.Compare(a.Name, b.Name) })
}

// encodedSize is the size of st as JSON, the encoding its answer travels in. A query's answer is not
// workflow state: the map order inside encoding/json changes nothing that is replayed.
//
//workflowcheck:ignore
func encodedSize(st api.GitRepoStatus) int {
	b, err := json.Marshal(st)
	if err != nil {
		return 0
	}
	return len(b)
}
