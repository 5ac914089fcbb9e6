package tmpl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/Masterminds/sprig/v3"
	"github.com/stretchr/testify/require"
)

func TestFuncMapFunctionsAreBounded(t *testing.T) {
	repeat := FuncMap()["repeat"].(func(int, string) (string, error))
	_, err := repeat(200000000, "x")
	require.EqualError(t, err, "repeat: 200000000 characters is over the 4 MiB limit of a template's output")
	s, err := repeat(3, "ab")
	require.NoError(t, err)
	require.Equal(t, "ababab", s)
}

func TestDefineTemplateAndBlockAreRefused(t *testing.T) {
	for text, line := range map[string]string{
		"a: 1\n${ define \"x\" }${ template \"x\" }${ end }\n": "line 2: define and block",
		"a: 1\n${ template \"x\" }\n":                          "line 2: template and block are not available in Flotilla templates",
		"${ block \"x\" . }b: 1${ end }\n":                     "line 1: define and block are not available",
	} {
		_, err, _ := renderFile(t, text, edge)
		require.ErrorContains(t, err, "app/values.yaml: "+line, text)
	}
}

func TestSequencesMatchSprig(t *testing.T) {
	sp := sprig.TxtFuncMap()
	for start := -4; start <= 4; start++ {
		require.Equal(t, sp["until"].(func(int) []int)(start), must(sequences["until"].(func(int) ([]int, error))(start)))
		require.Equal(t, sp["seq"].(func(...int) string)(start), must(seq(start)))
		for stop := -4; stop <= 4; stop++ {
			require.Equal(t, sp["seq"].(func(...int) string)(start, stop), must(seq(start, stop)))
			for step := -3; step <= 3; step++ {
				in := fmt.Sprint(start, stop, step)
				require.Equal(t, sp["untilStep"].(func(int, int, int) []int)(start, stop, step), must(sequence("untilStep", start, stop, step)), in)
				require.Equal(t, sp["seq"].(func(...int) string)(start, step, stop), must(seq(start, step, stop)), in)
			}
		}
	}
	require.Equal(t, "", must(seq(1, 2, 3, 4)))
}

func TestShortCircuitingStillShortCircuits(t *testing.T) {
	got, err, _ := renderFile(t, strings.Join([]string{
		`a: ${ and false (fail "and evaluated its second argument") }`,
		`o: ${ or true (fail "or evaluated its second argument") }`,
		`e: ${ if eq (index .ClusterLabels "missing") "x" }matched${ else }missed${ end }`,
		`i: ${ index .ClusterValues.replicas | printf "%v" }`,
	}, "\n")+"\n", edge)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": false, "o": true, "e": "missed", "i": float64(3)}, got)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
