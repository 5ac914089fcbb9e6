package charts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/chartrepo"
)

// bigIndex is an index.yaml of about size bytes as public repositories write them: many charts, many
// versions each, and most of the bytes descriptions, maintainers and keywords.
func bigIndex(size int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n")
	filler := strings.Repeat("A chart of charts that charts charts. ", 20)
	for c := 0; b.Len() < size; c++ {
		fmt.Fprintf(&b, "  chart-%d:\n", c)
		for v := 0; v < 50 && b.Len() < size; v++ {
			fmt.Fprintf(&b, "  - apiVersion: v2\n    name: chart-%d\n    version: 1.%d.0\n    description: %q\n"+
				"    keywords: [a, b, c, d]\n    maintainers:\n    - name: someone\n      email: someone@example.com\n"+
				"    digest: %064d\n    urls:\n    - https://charts.example.com/chart-%d-1.%d.0.tgz\n", c, v, fmt.Sprint(c, v, filler), v, c, v)
		}
	}
	return []byte(b.String())
}

// A 16 MiB index.yaml is parsed into what resolving needs: what stays in memory is a small part of it.
func TestABigIndexIsKeptSmall(t *testing.T) {
	data := bigIndex(16 << 20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	index, size, err := parseIndex(data)
	require.NoError(t, err)
	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("16 MiB index.yaml: %d versions, %.1f MiB kept (estimated %.1f), %.0f MiB allocated to parse",
		countVersions(index.Entries), float64(kept)/(1<<20), float64(size)/(1<<20), float64(allocated)/(1<<20))
	require.Less(t, kept, int64(16<<20), "less kept than the document's own size")
	require.Less(t, allocated, uint64(1<<30))
	runtime.KeepAlive(index)
	runtime.KeepAlive(data)

	cv, err := entry(index, "chart-3", "~1.7.0")
	require.NoError(t, err)
	require.Equal(t, "1.7.0", cv.Version)
	require.Equal(t, []string{"https://charts.example.com/chart-3-1.7.0.tgz"}, cv.URLs)
}

func countVersions[M ~map[string]V, V ~[]E, E any](m M) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

func TestAnIndexListingTooManyVersionsIsRefused(t *testing.T) {
	entries := make([]map[string]string, maxIndexVersions+1)
	for i := range entries {
		entries[i] = map[string]string{"name": "web", "version": fmt.Sprintf("0.0.%d", i)}
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "entries": map[string]any{"web": entries}})
	require.NoError(t, err)
	_, _, err = parseIndex(data)
	require.EqualError(t, err, "index.yaml lists more than 100000 chart versions, the most Flotilla reads")
}

// The parsed indexes of many repositories stay within their memory budget: the least recently used goes.
func TestParsedIndexesAreEvictedLeastRecentlyUsedFirst(t *testing.T) {
	l := newSizedLRU[string](100)
	l.put("a", "A", 40)
	l.put("b", "B", 40)
	_, ok := l.get("a") // a is used: b is now the least recent
	require.True(t, ok)
	l.put("c", "C", 40)
	_, ok = l.get("b")
	require.False(t, ok, "b went first")
	for _, k := range []string{"a", "c"} {
		_, ok = l.get(k)
		require.True(t, ok, k)
	}
	l.put("huge", "H", 101)
	_, ok = l.get("huge")
	require.False(t, ok, "larger than the whole budget: not kept")
	require.Equal(t, 2, l.len())

	// Through the Fetcher: one index memo per repository and credentials, within the budget.
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0")
	f, _ := newFetcher(t)
	_, err := f.Resolve(context.Background(), Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, f.indexes.len())
}

// A registry that pages its tag list without end is read up to maxTags, then refused.
func TestARegistryThatNeverStopsPagingIsCutOff(t *testing.T) {
	pages := 0
	reg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/charts/web/tags/list" {
			pages++
			tags := make([]string, 1000)
			for i := range tags {
				tags[i] = fmt.Sprintf("0.%d.%d", pages, i)
			}
			w.Header().Set("Link", fmt.Sprintf(`</v2/charts/web/tags/list?last=%s&n=1000>; rel="next"`, tags[len(tags)-1]))
			_ = json.NewEncoder(w).Encode(map[string]any{"name": "charts/web", "tags": tags})
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "https://")
	cr := &creds{prefix: "", auth: &Auth{CABundle: pemOf(t, reg)}}
	f, _ := newFetcher(t)
	_, err := f.Resolve(context.Background(), Source{Repo: "oci://" + host + "/charts", Chart: "web"}, cr, ResolveOptions{})
	require.ErrorContains(t, err, "the repository lists more than 10000 tags, the most Flotilla reads")
	require.LessOrEqual(t, pages, 11)
}
