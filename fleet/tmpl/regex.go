package tmpl

import (
	"reflect"
	"regexp"
	"regexp/syntax"
	"strings"
)

// Go's regular expressions take time in proportion to the text times the compiled program, and memory
// in proportion to the program (up to 128 MiB): both are bounded before compiling.
const (
	maxRegexInsts = 10_000
	// maxRegexWork bounds instructions × characters for one call, about a tenth of a second at worst.
	maxRegexWork = 1 << 24
)

// regexes replace sprig's functions that return one element per match or build a replaced string, so
// their results are bounded while they are built, not after.
var regexes = map[string]any{
	"regexFindAll": func(re, s string, n int) ([]string, error) {
		return findAll("regexFindAll", regexp.MustCompile(re), s, n)
	},
	"mustRegexFindAll": func(re, s string, n int) ([]string, error) {
		r, err := regexp.Compile(re)
		if err != nil {
			return []string{}, err
		}
		return findAll("mustRegexFindAll", r, s, n)
	},
	"regexSplit": func(re, s string, n int) ([]string, error) {
		return split("regexSplit", regexp.MustCompile(re), s, n)
	},
	"mustRegexSplit": func(re, s string, n int) ([]string, error) {
		r, err := regexp.Compile(re)
		if err != nil {
			return []string{}, err
		}
		return split("mustRegexSplit", r, s, n)
	},
	"regexReplaceAll": func(re, s, repl string) (string, error) {
		return replaceAll("regexReplaceAll", regexp.MustCompile(re), s, repl, false)
	},
	"mustRegexReplaceAll": func(re, s, repl string) (string, error) {
		r, err := regexp.Compile(re)
		if err != nil {
			return "", err
		}
		return replaceAll("mustRegexReplaceAll", r, s, repl, false)
	},
	"regexReplaceAllLiteral": func(re, s, repl string) (string, error) {
		return replaceAll("regexReplaceAllLiteral", regexp.MustCompile(re), s, repl, true)
	},
	"mustRegexReplaceAllLiteral": func(re, s, repl string) (string, error) {
		r, err := regexp.Compile(re)
		if err != nil {
			return "", err
		}
		return replaceAll("mustRegexReplaceAllLiteral", r, s, repl, true)
	},
}

const maxMatches = MaxOutput / nodeBytes

// capped asks for one match more than the limit allows, so finding it means the limit is passed.
func capped(n int) int {
	if n < 0 || n > maxMatches+1 {
		return maxMatches + 1
	}
	return n
}

func findAll(fn string, re *regexp.Regexp, s string, n int) ([]string, error) {
	out := re.FindAllString(s, capped(n))
	if len(out) > maxMatches {
		return nil, overLimit(fn, "more than %d matches is over %s", maxMatches, valueLimit)
	}
	return out, nil
}

func split(fn string, re *regexp.Regexp, s string, n int) ([]string, error) {
	out := re.Split(s, capped(n))
	if len(out) > maxMatches {
		return nil, overLimit(fn, "more than %d pieces is over %s", maxMatches, valueLimit)
	}
	return out, nil
}

// replaceAll measures the result before building it: each match becomes the replacement, whose $1 and
// ${name} expand to parts of the match, so to at most the match's length each.
func replaceAll(fn string, re *regexp.Regexp, s, repl string, literal bool) (string, error) {
	refs := 0
	if !literal {
		refs = strings.Count(repl, "$")
	}
	size := len(s)
	re.ReplaceAllStringFunc(s, func(m string) string {
		size += len(repl) + refs*len(m) - len(m)
		if size > MaxOutput {
			size = MaxOutput + 1 // and stays there: no overflow however many matches follow
		}
		return ""
	})
	if size > MaxOutput {
		return "", overLimit(fn, "the result would be over %s", outputLimit)
	}
	if literal {
		return re.ReplaceAllLiteralString(s, repl), nil
	}
	return re.ReplaceAllString(s, repl), nil
}

// regexGuard bounds a call of any regular expression function (pattern first, text second) before the
// pattern is compiled, and charges the work; replacing costs two passes.
func regexGuard(fn string, passes int) guard {
	return func(b *budget, args []reflect.Value) error {
		pattern, text := args[0].String(), args[1].Len()
		parsed, err := syntax.Parse(pattern, syntax.Perl)
		if err != nil {
			return nil // the function reports it as it always did
		}
		insts := progSize(parsed)
		if insts > maxRegexInsts {
			return overLimit(fn, "%q compiles to more than the limit of %d instructions", abbreviate(pattern), maxRegexInsts)
		}
		work, ok := mulSat(insts, text+1)
		if !ok || work > maxRegexWork {
			return overLimit(fn, "matching %q (about %d instructions) against %d characters is over the limit of %d instructions × characters",
				abbreviate(pattern), insts, text, maxRegexWork)
		}
		return b.spend(fn, passes*work/bytesPerStep+len(pattern)/bytesPerStep)
	}
}

// progSize estimates the instructions a parsed expression compiles to, as regexp/syntax does, saturating
// just past maxRegexInsts.
func progSize(re *syntax.Regexp) int {
	size := 0
	switch re.Op {
	case syntax.OpLiteral:
		size = len(re.Rune)
	case syntax.OpCapture, syntax.OpStar:
		size = 2 + progSize(re.Sub[0])
	case syntax.OpPlus, syntax.OpQuest:
		size = 1 + progSize(re.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			size += progSize(sub) + 1
		}
	case syntax.OpRepeat:
		n := re.Max
		if n < 0 {
			n = re.Min + 1
		}
		size, _ = mulSat(n, progSize(re.Sub[0])+1)
	}
	return min(max(size, 1), maxRegexInsts+1)
}

func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// mulSat multiplies non-negative a and b, reporting false (and a result over MaxOutput) on overflow.
func mulSat(a, b int) (int, bool) {
	if a < 0 || b < 0 {
		return 0, true
	}
	if a != 0 && b > (1<<62)/a {
		return 1 << 62, false
	}
	return a * b, true
}
