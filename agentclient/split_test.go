package agentclient

import (
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// helmSplit is what Helm's own splitter returns, in its order.
func helmSplit(manifest string) []string {
	m := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var docs []string
	for _, k := range keys {
		docs = append(docs, m[k])
	}
	return docs
}

// The scan splits every manifest as Helm's regular expression does, on the cases that decide it (a
// separator at the start, white space around one, dashes inside a document or swallowed by the white
// space of a separator before them) and on many random streams of those pieces.
func TestSplitManifestSplitsAsHelmDoes(t *testing.T) {
	cases := []string{
		"",
		"   \n ",
		"---",
		"---\n",
		"a: 1",
		"---\n# Source: x/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\n---\n# Source: x/templates/b.yaml\nkind: B\n",
		"a: 1\n---\nb: 2\n---\n",
		"a: 1 \t\n\n---   \n\n b: 2",
		"---\n---\nfoo",
		"a\n---b\n----\nc",
		"data:\n  text: |\n    one\n---\n    two\n",
		"\r\n---\r\na\r\n---\r\n",
		"x\n\n\n---\n\n\n---\n\n\ny",
	}
	for _, c := range cases {
		require.Equal(t, helmSplit(c), splitManifest(c), "%q", c)
	}

	pieces := []string{"-", "--", "---", "\n", " ", "\t", "\r", "a", "kind: X", "\n---\n", "\n--- ", "#"}
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rnd.Intn(14); n > 0; n-- {
			b.WriteString(pieces[rnd.Intn(len(pieces))])
		}
		s := b.String()
		require.Equal(t, helmSplit(s), splitManifest(s), "%q", s)
	}
}

func FuzzSplitManifestSplitsAsHelmDoes(f *testing.F) {
	f.Add("a: 1\n---\nb: 2")
	f.Add("---\n---\nfoo")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := splitManifest(s), helmSplit(s); !slices.Equal(got, want) {
			t.Fatalf("%q: got %q, Helm %q", s, got, want)
		}
	})
}
