package tmpl

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// guards check, before the call, the functions whose result can be far larger than their arguments
// (a count, a width, a separator repeated per element), and charge the ones whose work grows faster than
// their result (comparing every element with every other). Every other function is linear in its
// arguments, and its result is measured after the call.
var guards = func() map[string]guard {
	g := map[string]guard{
		"repeat":           guardRepeat,
		"indent":           guardIndent(0),
		"nindent":          guardIndent(1),
		"wrapWith":         guardWrapWith,
		"replace":          guardReplace,
		"join":             guardJoin,
		"split":            guardSplit("split", 2),
		"splitList":        guardSplit("splitList", 1),
		"splitn":           guardSplitN,
		"printf":           guardPrintf,
		"chunk":            guardChunk("chunk"),
		"mustChunk":        guardChunk("mustChunk"),
		"uniq":             guardPairs("uniq"),
		"mustUniq":         guardPairs("mustUniq"),
		"without":          guardWithout("without"),
		"mustWithout":      guardWithout("mustWithout"),
		"fromJson":         guardFromJSON("fromJson"),
		"mustFromJson":     guardFromJSON("mustFromJson"),
		"toPrettyJson":     guardPretty("toPrettyJson"),
		"mustToPrettyJson": guardPretty("mustToPrettyJson"),
	}
	for _, fn := range []string{"regexMatch", "mustRegexMatch", "regexFind", "mustRegexFind",
		"regexFindAll", "mustRegexFindAll", "regexSplit", "mustRegexSplit"} {
		g[fn] = regexGuard(fn, 1)
	}
	for _, fn := range []string{"regexReplaceAll", "mustRegexReplaceAll", "regexReplaceAllLiteral", "mustRegexReplaceAllLiteral"} {
		g[fn] = regexGuard(fn, 2)
	}
	return g
}()

// textOver refuses a text of n characters (ok false: more than an int holds) over MaxOutput.
func textOver(fn string, n int, ok bool) error {
	if !ok {
		return overLimit(fn, "more characters than an int holds is over %s", outputLimit)
	}
	if n > MaxOutput {
		return overLimit(fn, "%d characters is over %s", n, outputLimit)
	}
	return nil
}

func addSat(a, b int) (int, bool) {
	if a > (1<<62)-b {
		return 1 << 62, false
	}
	return a + b, true
}

// repeat count str
func guardRepeat(_ *budget, args []reflect.Value) error {
	count, s := args[0].Int(), args[1].Len()
	if count < 0 {
		return fmt.Errorf("repeat: the count %d is negative", count)
	}
	if count > 1<<62 {
		return textOver("repeat", 0, false)
	}
	n, ok := mulSat(int(count), s)
	return textOver("repeat", n, ok)
}

// indent spaces text: every line gets the spaces.
func guardIndent(extra int) guard {
	return func(_ *budget, args []reflect.Value) error {
		spaces, s := int(args[0].Int()), args[1].String()
		fn := "indent"
		if extra > 0 {
			fn = "nindent"
		}
		if spaces < 0 {
			return nil // strings.Repeat refuses it
		}
		pad, ok := mulSat(strings.Count(s, "\n")+1, spaces)
		n, ok2 := addSat(pad, len(s)+extra)
		return textOver(fn, n, ok && ok2)
	}
}

// wrapWith width sep text: a separator at each space it breaks at, and every width characters of a
// long word.
func guardWrapWith(_ *budget, args []reflect.Value) error {
	width, sep, s := int(args[0].Int()), args[1].Len(), args[2].String()
	breaks := strings.Count(s, " ") + len(s)/max(width, 1) + 1
	added, ok := mulSat(breaks, sep)
	n, ok2 := addSat(added, len(s))
	return textOver("wrapWith", n, ok && ok2)
}

// replace old new text
func guardReplace(_ *budget, args []reflect.Value) error {
	old, repl, s := args[0].String(), args[1].Len(), args[2].String()
	if repl <= len(old) {
		return nil
	}
	added, ok := mulSat(strings.Count(s, old), repl-len(old))
	n, ok2 := addSat(added, len(s))
	return textOver("replace", n, ok && ok2)
}

// join sep list: the separator once per element.
func guardJoin(_ *budget, args []reflect.Value) error {
	list := measure(args[1], MaxOutput)
	added, ok := mulSat(list.nodes, args[0].Len())
	n, ok2 := addSat(added, list.size)
	return textOver("join", n, ok && ok2)
}

// split and splitList sep text: one element per separator (per character when it is empty).
func guardSplit(fn string, perPiece int) guard {
	return func(_ *budget, args []reflect.Value) error {
		return checkPieces(fn, args[1].String(), pieces(args[0].String(), args[1].String()), perPiece)
	}
}

// splitn sep n text
func guardSplitN(_ *budget, args []reflect.Value) error {
	sep, n, s := args[0].String(), int(args[1].Int()), args[2].String()
	p := pieces(sep, s)
	if n > 0 && n < p {
		p = n
	}
	return checkPieces("splitn", s, p, 2)
}

func pieces(sep, s string) int {
	if sep == "" {
		return utf8.RuneCountInString(s)
	}
	return strings.Count(s, sep) + 1
}

func checkPieces(fn, s string, n, perPiece int) error {
	if n > (MaxOutput-len(s))/(perPiece*nodeBytes) {
		return overLimit(fn, "%d pieces is over %s", n, valueLimit)
	}
	return nil
}

// printf format args…: fmt pads each element of a list to the width, so a width counts once per
// element of the arguments.
func guardPrintf(_ *budget, args []reflect.Value) error {
	rest := args[1]
	operands := make([]any, rest.Len())
	for i := range operands {
		operands[i] = rest.Index(i)
	}
	pad := padding(args[0].String(), operands)
	if pad == 0 {
		return nil
	}
	n, ok := mulSat(pad, measureAll(operands, MaxOutput).nodes+1)
	if !ok || n > MaxOutput {
		return overLimit("printf", "padding to %d characters is over %s", pad, outputLimit)
	}
	return nil
}

// fmtMax is the largest width or precision fmt accepts; it ignores larger ones.
const fmtMax = 1_000_000

// padding adds up the widths and precisions a format asks for, an argument's value for each *.
func padding(format string, operands []any) int {
	star := 0
	for _, o := range operands {
		if v, ok := o.(reflect.Value); ok {
			for v.Kind() == reflect.Interface && !v.IsNil() {
				v = v.Elem()
			}
			if v.CanInt() {
				star = max(star, min(abs(v.Int()), fmtMax))
			}
		}
	}
	total := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		for i++; i < len(format); i++ {
			c := format[i]
			if c >= '0' && c <= '9' {
				n := 0
				for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
					n = min(n*10+int(format[i]-'0'), fmtMax)
				}
				total += n
				i--
			} else if c == '*' {
				total += star
			} else if !strings.ContainsRune("+-# .[]", rune(c)) {
				break // the verb
			}
		}
	}
	return total
}

func abs(n int64) int {
	if n < 0 {
		return int(-max(n, -(1 << 62)))
	}
	return int(min(n, 1<<62))
}

// chunk size list: a size under 1 made sprig divide by zero.
func guardChunk(fn string) guard {
	return func(_ *budget, args []reflect.Value) error {
		if size := args[0].Int(); size < 1 {
			return fmt.Errorf("%s: the size %d is not at least 1", fn, size)
		}
		return nil
	}
}

// uniq compares every element with the ones kept before it.
func guardPairs(fn string) guard {
	return func(b *budget, args []reflect.Value) error {
		n := lengthOf(args[0])
		pairs, _ := mulSat(n, n)
		return b.spend(fn, pairs/comparisonsPerStep)
	}
}

// without list omit…: every element against every omitted value.
func guardWithout(fn string) guard {
	return func(b *budget, args []reflect.Value) error {
		pairs, _ := mulSat(lengthOf(args[0]), args[1].Len())
		return b.spend(fn, pairs/comparisonsPerStep)
	}
}

// fromJson text: each element of a list or map decodes to about nodeBytes, from as little as two
// characters, so the text's commas, colons and brackets bound the result before decoding.
func guardFromJSON(fn string) guard {
	return func(_ *budget, args []reflect.Value) error {
		s := args[0].String()
		nodes := 1
		for _, c := range []string{",", ":", "[", "{"} {
			nodes += strings.Count(s, c)
		}
		if n, ok := mulSat(nodes, nodeBytes); !ok || n+len(s) > MaxOutput {
			return overLimit(fn, "%d elements is over %s", nodes, valueLimit)
		}
		return nil
	}
}

// toPrettyJson value: every line is indented by its depth.
func guardPretty(fn string) guard {
	return func(_ *budget, args []reflect.Value) error {
		e := measure(args[0], MaxOutput)
		if e.size+e.indent > MaxOutput {
			return overLimit(fn, "the indented result would be over %s", outputLimit)
		}
		return nil
	}
}

func lengthOf(v reflect.Value) int {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		return v.Len()
	}
	return 1
}
