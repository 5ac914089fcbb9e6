package tmpl

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// attackAlloc bounds what refusing an attack may allocate in all (garbage included): the attacks below
// asked for gigabytes, or for ever, before the limits.
const attackAlloc = 64 << 20

// renderFile renders a values file of the bundle "app" for the cluster, and reports the bytes the
// render allocated.
func renderFile(t *testing.T, text string, c fleet.ClusterInfo) (map[string]any, error, uint64) {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "app"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "app", "values.yaml"), []byte(text), 0o644))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := Values(root, "app", &fleet.HelmOptions{ValuesFiles: []string{"values.yaml"}}, c)
	runtime.ReadMemStats(&after)
	return got, err, after.TotalAlloc - before.TotalAlloc
}

// requireRefused checks that the template is refused as a TemplateError naming the file, the line and
// the limit, having allocated little.
func requireRefused(t *testing.T, text string, c fleet.ClusterInfo, want ...string) {
	t.Helper()
	_, err, alloc := renderFile(t, text, c)
	require.Error(t, err)
	require.True(t, IsTemplateError(err), "%v", err)
	for _, w := range want {
		require.ErrorContains(t, err, w)
	}
	t.Logf("refused after allocating %d KiB: %v", alloc>>10, err)
	require.Less(t, alloc, uint64(attackAlloc), "refusing %q allocated %d MiB", text, alloc>>20)
}

func TestRepeatIsRefusedBeforeItAllocates(t *testing.T) {
	requireRefused(t, "a: 1\nb: 2\nc: ${ repeat 200000000 \"x\" }\n", edge,
		`app/values.yaml: line 3: repeat: 200000000 characters is over the 4 MiB limit of a template's output`)
}

func TestUntilIsRefusedBeforeItAllocates(t *testing.T) {
	requireRefused(t, "${ range until 100000000 }x${ end }\n", edge,
		`app/values.yaml: line 1: until: a list of 100000000 numbers is over the 4 MiB limit of a template's values`)
}

// countingStepsOnly turns the time limit off for one test of the step limit, which is the same on every
// machine; the time limit has tests of its own. It sets a package variable, so no test of this package
// may run in parallel with one that calls it.
func countingStepsOnly(t *testing.T) {
	renderTimeout = 0
	t.Cleanup(func() { renderTimeout = MaxRenderTime })
}

func TestNestedRangesOverIntsStopAtTheStepLimit(t *testing.T) {
	countingStepsOnly(t)
	requireRefused(t, "a: 1\n${ range 100000 }${ range 100000 }${ end }${ end }\n", edge,
		`app/values.yaml: line 2: range: the template is over its limit of 100000 steps`)
}

func TestEmptyLoopsOverUntilStopAtTheStepLimit(t *testing.T) {
	countingStepsOnly(t)
	requireRefused(t, "${ range $i := until 200000 }${ end }\n", edge, "over its limit of 100000 steps")
}

func TestDoublingAStringStopsAtTheOutputLimit(t *testing.T) {
	requireRefused(t, "${ $x := \"x\" }${ range until 40 }${ $x = cat $x $x }${ end }v: ${ len $x }\n", edge,
		`app/values.yaml: line 1: cat: its arguments add up to more than the 4 MiB limit of a template's values`)
}

func TestDoublingAListStopsAtTheValueLimit(t *testing.T) {
	requireRefused(t, "${ $x := list 1 }${ range until 40 }${ $x = concat $x $x }${ end }v: ${ len $x }\n", edge,
		"concat: ", "more than the 4 MiB limit of a template's values")
}

func TestPrintfPaddingIsRefusedBeforeItAllocates(t *testing.T) {
	requireRefused(t, "v: ${ printf \"%1000000v\" (until 2000) }\n", edge,
		`app/values.yaml: line 1: printf: padding to 1000000 characters is over the 4 MiB limit of a template's output`)
	got, err, _ := renderFile(t, "v: '${ printf \"%999999999d\" 1 }'\n", edge)
	require.NoError(t, err, "fmt itself ignores widths over a million")
	require.Equal(t, "%!(NOVERB)%!(EXTRA int=1)", got["v"])
}

func TestNestedRangesOverALargeClusterListStopAtTheStepLimit(t *testing.T) {
	countingStepsOnly(t)
	// 2,000 hosts nest to 4,000,000 steps, 40 times the limit.
	hosts := make([]any, 2_000)
	for i := range hosts {
		hosts[i] = "host"
	}
	c := edge
	c.TemplateValues = map[string]any{"hosts": hosts}
	requireRefused(t, "${ range .ClusterValues.hosts }${ range $.ClusterValues.hosts }${ end }${ end }\n", c,
		"line 1: range: the template is over its limit of 100000 steps")
}

func TestFunctionsThatMultiplyTheirArgumentsAreRefusedBeforeTheyAllocate(t *testing.T) {
	for expr, want := range map[string]string{
		`indent 100000000 "x"`:                                     "indent: 100000001 characters is over",
		`"a\nb\nc" | nindent 3000000`:                              "nindent: 9000006 characters is over",
		`join (repeat 1000000 "x") (until 1000)`:                   "join: ",
		`replace "" (repeat 1000 "y") (repeat 100000 "x")`:         "replace: ",
		`wrapWith 1 (repeat 100000 "-") (repeat 1000 "x")`:         "wrapWith: ",
		`regexReplaceAll "" (repeat 100000 "x") (repeat 1000 "y")`: "regexReplaceAll: the result would be over",
		`regexFindAll "" (repeat 1000000 "x") -1`:                  "regexFindAll: ",
		`splitList "" (repeat 1000000 "x")`:                        "splitList: 1000000 pieces is over",
		`seq 100000000`:                                            "seq: 100000000 numbers is over",
		`untilStep 0 100000000 1`:                                  "untilStep: a list of 100000000 numbers",
		`toPrettyJson (fromJson (printf "%s0%s%s" (repeat 98 "[") (repeat 100000 ",0") (repeat 98 "]")))`: "toPrettyJson: the indented result would be over",
		`regexMatch (repeat 11 "x{1000}") "a"`:           `regexMatch: "x{1000}x{1000}x{1000}x{1000}x{1000}x{..." compiles to more than the limit of 10000 instructions`,
		`regexMatch "[a-z]+[0-9]+" (repeat 4000000 "a")`: `regexMatch: matching "[a-z]+[0-9]+" (about 6 instructions) against 4000000 characters is over the limit`,
	} {
		t.Run(expr, func(t *testing.T) {
			text := "v: ${ " + expr + " }\n"
			requireRefused(t, text, edge, "app/values.yaml: line 1: "+want)
		})
	}
}

func TestAValueThatContainsItselfIsRefused(t *testing.T) {
	// Printing it would recurse until the stack overflows, which no recover catches.
	requireRefused(t, "${ $d := dict }${ $_ := set $d \"self\" $d }v: ${ $d }\n", edge,
		"line 1: set: the result nests deeper than the limit of 100 levels")
}

func TestValuesNestedTooDeeplyAreRefused(t *testing.T) {
	requireRefused(t, "${ $x := list }${ range until 200 }${ $x = list $x }${ end }v: ${ toJson $x }\n", edge,
		"line 1: list: the result nests deeper than the limit of 100 levels")
}

func TestLongTemplateCodeIsRefusedBeforeParsing(t *testing.T) {
	requireRefused(t, "v: ${ list "+strings.Repeat("1 ", 100_000)+"}\n", edge,
		"app/values.yaml: its ${ } expressions take 200009 bytes, over the limit of 128 KiB")
}

func TestOutputIsCapped(t *testing.T) {
	x := "${ repeat 4000000 \"x\" }"
	requireRefused(t, "a: "+x+"\nb: "+x+"\n", edge, "app/values.yaml: the output is over the 4 MiB limit of a template's output")
}

func TestEqComparesAtMostALimitedNumberOfValues(t *testing.T) {
	requireRefused(t, "v: ${ eq 1"+strings.Repeat(" 2", 65)+" }\n", edge,
		"line 1: eq: 66 values is over the limit of 64 compared at once")
}

func TestSlowStepsStopAtTheDeadline(t *testing.T) {
	// Two distinct 4 MiB strings: each comparison reads both, and costs one step like a short one.
	requireRefused(t, `${ $x := repeat 4000000 "x" }${ $y := repeat 4000000 "x" }${ range 40000 }${ if eq $x $y }${ end }${ end }`+"\n",
		edge, "line 1: ", "the template ran longer than its limit of 1s")
}

func TestUntilStepNearTheLargestIntStops(t *testing.T) {
	// sprig's untilStep adds the step past the largest int, wraps below stop and never returns.
	got, err, _ := renderFile(t, "v: ${ untilStep 0 9223372036854775807 4611686018427387904 | toJson }\n", edge)
	require.NoError(t, err)
	require.Equal(t, []any{float64(0), float64(4611686018427387904)}, got["v"])
}

// A values file over the limit is refused before YAML parses it (parsing allocates a hundred times its size).
func TestAnOversizedValuesFileIsRefusedBeforeParsing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "app"), 0o755))
	big := "a: \"" + strings.Repeat("x", MaxValuesFile) + "\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "app", "values.yaml"), []byte(big), 0o644))
	_, err := Values(dir, "app", &fleet.HelmOptions{ValuesFiles: []string{"values.yaml"}, DisablePreProcess: true}, fleet.ClusterInfo{Name: "c"})
	require.ErrorContains(t, err, "app/values.yaml: ")
	require.ErrorContains(t, err, "is over the 4 MiB limit of a values file")
}
