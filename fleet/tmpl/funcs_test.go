package tmpl

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/sprig/v3"
	"github.com/stretchr/testify/require"
)

func TestRemovedFunctionsAreNamedWithTheReason(t *testing.T) {
	sprigFuncs := sprig.TxtFuncMap()
	funcs := FuncMap()
	for name, reason := range removed {
		if name != "include" && name != "tpl" { // Helm's, which Fleet deletes all the same
			require.Contains(t, sprigFuncs, name, "the list names sprig's functions")
		}
		require.NotContains(t, funcs, name)
		// Refused where it is written, even in a branch that never runs.
		_, err, _ := renderFile(t, "a: 1\n${ if false }${ "+name+" }${ end }\n", edge)
		require.EqualError(t, err, "app/values.yaml: line 2: "+name+" is not available in Flotilla templates: "+reason)
	}
	_, err, _ := renderFile(t, "v: ${ randAlphaNum 16 }\n", edge)
	require.EqualError(t, err, "app/values.yaml: line 1: randAlphaNum is not available in Flotilla templates: a render must "+
		"give the same result every time, or every check would redeploy; put generated secrets in cluster values or let the chart generate them")
	require.Len(t, funcs, len(sprigFuncs)-(len(removed)-2)+len(overrides), "sprig's functions without the removed ones, and the builtins that print")
}

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

// Every function is called twice with the same arguments (built from its parameter types) and must
// give the same result: nothing left reads the clock, randomness or map order.
func TestEveryFunctionIsAFunctionOfItsArguments(t *testing.T) {
	date := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	sample := map[reflect.Type]reflect.Value{
		reflect.TypeFor[string]():         reflect.ValueOf("ab,c d"),
		reflect.TypeFor[int]():            reflect.ValueOf(3),
		reflect.TypeFor[uint32]():         reflect.ValueOf(uint32(3)),
		reflect.TypeFor[bool]():           reflect.ValueOf(true),
		reflect.TypeFor[float64]():        reflect.ValueOf(2.5),
		reflect.TypeFor[time.Time]():      reflect.ValueOf(date),
		reflect.TypeFor[map[string]any](): reflect.ValueOf(map[string]any{"b": 1, "a": 2, "c": 3, "d": 4, "e": 5, "f": 6}),
		reflect.TypeFor[[]any]():          reflect.ValueOf([]any{"x", "y", "z", "w", "v", "u"}),
	}
	arg := func(typ reflect.Type) reflect.Value {
		if v, ok := sample[typ]; ok {
			return v
		}
		if typ.Kind() == reflect.Interface {
			return reflect.ValueOf(map[string]any{"b": 1, "a": []any{1, 2, 3, 4, 5}, "c": "s", "d": date})
		}
		return reflect.Zero(typ)
	}
	call := func(name string, fn any) string {
		v := reflect.ValueOf(fn)
		typ := v.Type()
		var args []reflect.Value
		for i := 0; i < typ.NumIn(); i++ {
			in := typ.In(i)
			if typ.IsVariadic() && i == typ.NumIn()-1 {
				s := reflect.MakeSlice(in, 3, 3)
				for j := range 3 {
					s.Index(j).Set(arg(in.Elem()))
				}
				args = append(args, s)
				continue
			}
			args = append(args, arg(in))
		}
		var out []reflect.Value
		if typ.IsVariadic() {
			out = v.CallSlice(args)
		} else {
			out = v.Call(args)
		}
		return fmt.Sprintf("%#v %v", out[0].Interface(), out[1].Interface())
	}
	for name, fn := range FuncMap() {
		if name == "fail" {
			continue
		}
		first := call(name, fn)
		for range 5 {
			require.Equal(t, first, call(name, fn), name)
		}
	}
}

func TestDatesAreFormattedInUTCWhateverTheWorkersZone(t *testing.T) {
	local := time.Local
	time.Local = time.FixedZone("worker", 5*3600)
	t.Cleanup(func() { time.Local = local })
	got, err, _ := renderFile(t, `date: ${ date "2006-01-02T15:04" 0 | quote }
html: ${ htmlDate 86399 | quote }
zone: ${ dateInZone "15:04" 0 "Local" | quote }
parsed: ${ toDate "2006-01-02 15:04" "2024-05-06 07:08" | unixEpoch | quote }
`, edge)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"date": "1970-01-01T00:00", "html": "1970-01-01", "zone": "00:00", "parsed": "1714979280"}, got)
}

func TestDatesOfWhatIsNotADateAreErrorsNotTheCurrentTime(t *testing.T) {
	_, err, _ := renderFile(t, "v: ${ date \"2006\" \"2024-01-01\" }\n", edge)
	require.ErrorContains(t, err, "app/values.yaml: line 1: <date \"2006\" \"2024-01-01\">: error calling date: date: string is not a date")
	_, err, _ = renderFile(t, "v: ${ durationRound (toDate \"2006\" \"2024\") }\n", edge)
	require.ErrorContains(t, err, "durationRound: the time since a date depends on the clock")
}

func TestKeysAndValuesComeInKeyOrder(t *testing.T) {
	keys := make([]string, 50)
	m := map[string]any{}
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
		m[keys[i]] = i
	}
	c := edge
	c.TemplateValues = map[string]any{"m": m}
	got, err, _ := renderFile(t, "keys: ${ keys .ClusterValues.m | toJson }\nvalues: ${ values .ClusterValues.m | toJson }\n", c)
	require.NoError(t, err)
	want := make([]any, len(keys))
	values := make([]any, len(keys))
	for i, k := range keys {
		want[i], values[i] = k, float64(i)
	}
	require.Equal(t, want, got["keys"])
	require.Equal(t, values, got["values"])
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

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestATemplateCannotChangeTheClusterValuesOfTheNextRender(t *testing.T) {
	c := edge
	c.TemplateValues = map[string]any{"n": 1, "l": []any{map[string]any{"k": "v"}}}
	for range 2 {
		got, err, _ := renderFile(t, "${ $_ := set .ClusterValues \"n\" (add1 .ClusterValues.n) }${ $_ := set (first .ClusterValues.l) \"k\" \"w\" }count: ${ .ClusterValues.n }\n", c)
		require.NoError(t, err)
		require.EqualValues(t, 2, got["count"])
	}
	require.Equal(t, map[string]any{"n": 1, "l": []any{map[string]any{"k": "v"}}}, c.TemplateValues)
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
