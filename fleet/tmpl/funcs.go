package tmpl

import (
	"fmt"
	"maps"
	"reflect"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

const (
	notReproducible = "a render must give the same result every time, or every check would redeploy; " +
		"put generated secrets in cluster values or let the chart generate them"
	readsClock = "it reads the clock, and a render must give the same result every time, or every check " +
		"would redeploy; put dates in cluster values"
)

// removed lists sprig's functions that templates cannot call, with the reason a template that names one
// is given. Fleet removes env, expandenv, include, tpl and getHostByName. Flotilla also removes:
//
//   - the random and the clock: randAlphaNum, randAlpha, randAscii, randNumeric, randInt, randBytes,
//     shuffle, uuidv4, now, ago; bcrypt and htpasswd (random salt), encryptAES (random IV), and the
//     certificate generators genCA, genCAWithKey, genSelfSignedCert, genSelfSignedCertWithKey,
//     genSignedCert, genSignedCertWithKey (random serial, the clock). Fleet templates on every
//     reconcile, so with these an unchanged commit redeploys new passwords after a restart and two
//     workers disagree on what is deployed.
//   - the deliberately slow: derivePassword (scrypt, 32 MiB a call), genPrivateKey (RSA generation takes
//     seconds), and buildCustomCert, which parses keys of any size and is only of use with the generators.
//
// Kept but made reproducible (reproducible.go): the date functions format in UTC instead of the
// worker's zone and refuse what is not a date instead of using the current time; durationRound refuses a
// date instead of measuring the time since it; keys and values return a map's entries sorted by key
// instead of in Go's random map order.
var removed = map[string]string{
	"env":           "it reads the worker's environment",
	"expandenv":     "it reads the worker's environment",
	"getHostByName": "it asks the worker's DNS, whose answer changes and tells about the worker's network",
	"include":       "templates cannot call other templates",
	"tpl":           "templates cannot call other templates",

	"randAlphaNum": notReproducible,
	"randAlpha":    notReproducible,
	"randAscii":    notReproducible,
	"randNumeric":  notReproducible,
	"randInt":      notReproducible,
	"randBytes":    notReproducible,
	"shuffle":      notReproducible,
	"uuidv4":       notReproducible,
	"bcrypt":       "its salt is random: " + notReproducible,
	"htpasswd":     "its salt is random: " + notReproducible,
	"encryptAES":   "its IV is random: " + notReproducible,
	"now":          readsClock,
	"ago":          readsClock,

	"genCA":                    "certificates get a random serial and the current time: " + notReproducible,
	"genCAWithKey":             "certificates get a random serial and the current time: " + notReproducible,
	"genSelfSignedCert":        "certificates get a random serial and the current time: " + notReproducible,
	"genSelfSignedCertWithKey": "certificates get a random serial and the current time: " + notReproducible,
	"genSignedCert":            "certificates get a random serial and the current time: " + notReproducible,
	"genSignedCertWithKey":     "certificates get a random serial and the current time: " + notReproducible,
	"genPrivateKey":            "generating a key takes seconds and gives a random key: " + notReproducible,
	"derivePassword":           "it is deliberately slow (scrypt, 32 MiB a call); put passwords in cluster values",
	"buildCustomCert":          "it parses keys of any size, and is only of use with the certificate generators, which are unavailable",
}

func removedError(name string) string {
	return name + " is not available in Flotilla templates: " + removed[name]
}

// builtins are text/template's own functions that are not overridden below: they stay text/template's
// (and and or must, to short-circuit). The comparisons and index are charged a step each (parse.go).
var builtins = []string{"and", "call", "index", "len", "not", "or", "eq", "ge", "gt", "le", "lt", "ne"}

// overrides replace builtins that build strings, so their output is measured like any function's.
var overrides = map[string]any{
	"print":    fmt.Sprint,
	"printf":   fmt.Sprintf,
	"println":  fmt.Sprintln,
	"html":     template.HTMLEscaper,
	"js":       template.JSEscaper,
	"urlquery": template.URLQueryEscaper,
}

// functions is every function a template may call, by name, each checked as bound.call does.
var functions = func() map[string]*bound {
	impl := sprig.TxtFuncMap()
	for name := range removed {
		delete(impl, name)
	}
	for _, m := range []map[string]any{reproducible, sequences, regexes, overrides} {
		maps.Copy(impl, m)
	}
	out := make(map[string]*bound, len(impl))
	for name, fn := range impl {
		out[name] = newBound(name, fn, guards[name])
	}
	return out
}()

// parseNames is what the parser accepts as a function name.
var parseNames = func() map[string]any {
	names := make(map[string]any, len(functions)+len(builtins))
	for name := range functions {
		names[name] = true
	}
	for _, name := range builtins {
		names[name] = true
	}
	return names
}()

// FuncMap is the function set templates may use (sprig without the removed functions, with the
// reproducible replacements), each function checking its arguments and result against the limits and
// sharing one budget of MaxSteps calls, counted from this call on, with no time limit.
func FuncMap() template.FuncMap {
	b := newBudget(0)
	m := make(template.FuncMap, len(functions))
	for name, f := range functions {
		m[name] = f.bind(b)
	}
	return m
}

var errorType = reflect.TypeFor[error]()

// bound is a template function with its checks: a guard that looks at the arguments before the call
// (for functions whose result can be far larger than their arguments), and the size of the result after.
type bound struct {
	name  string
	fn    reflect.Value
	typ   reflect.Type // fn's type, returning an error too
	guard guard
}

// A guard refuses arguments that would make a function build more than the limits allow, or charges
// the budget for the work they ask for.
type guard func(b *budget, args []reflect.Value) error

func newBound(name string, fn any, g guard) *bound {
	v := reflect.ValueOf(fn)
	t := v.Type()
	in := make([]reflect.Type, t.NumIn())
	for i := range in {
		in[i] = t.In(i)
	}
	return &bound{name: name, fn: v, guard: g,
		typ: reflect.FuncOf(in, []reflect.Type{t.Out(0), errorType}, t.IsVariadic())}
}

// bind makes the function text/template calls, spending b.
func (f *bound) bind(b *budget) any {
	if fn, ok := f.bindTyped(b); ok {
		return fn
	}
	return reflect.MakeFunc(f.typ, func(args []reflect.Value) []reflect.Value {
		res, err := f.call(b, args)
		if err != nil {
			return []reflect.Value{reflect.Zero(f.typ.Out(0)), reflect.ValueOf(&err).Elem()}
		}
		return []reflect.Value{res, reflect.Zero(errorType)}
	}).Interface()
}

func (f *bound) call(b *budget, args []reflect.Value) (res reflect.Value, err error) {
	if err := b.spend(f.name, 1); err != nil {
		return res, err
	}
	if f.typ.IsVariadic() {
		// Many arguments, each within the limits, can still add up (cat $x $x $x …).
		if e := measureAll(valuesOf(args), MaxOutput); e.size > MaxOutput {
			return res, overLimit(f.name, "its arguments add up to more than %s", valueLimit)
		}
	}
	if f.guard != nil {
		if err := f.guard(b, args); err != nil {
			return res, err
		}
	}
	out, err := f.invoke(args)
	if err != nil {
		return res, err
	}
	size, err := checkResult(f.name, out)
	if err != nil {
		return res, err
	}
	return out, b.spendBytes(f.name, size)
}

// invoke calls the function, turning a panic (sprig panics on bad input) into an error.
func (f *bound) invoke(args []reflect.Value) (res reflect.Value, err error) {
	defer recovered(&err)
	var out []reflect.Value
	if f.typ.IsVariadic() {
		out = f.fn.CallSlice(args)
	} else {
		out = f.fn.Call(args)
	}
	if len(out) == 2 && !out[1].IsNil() {
		return out[0], out[1].Interface().(error)
	}
	return out[0], nil
}

// recovered turns a panic into the error of the function that defers it.
func recovered(err *error) {
	if r := recover(); r != nil {
		if e, ok := r.(error); ok {
			*err = e
		} else {
			*err = fmt.Errorf("%v", r)
		}
	}
}

func valuesOf(args []reflect.Value) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}
