package tmpl

import (
	"reflect"
)

// nodeBytes is what every element of a list or map, and every value, costs on top of its text: about what
// it takes in memory, and about what printing it adds.
const nodeBytes = 16

// extent is what measure found: size in bytes as defined by nodeBytes, the elements counted, how deep
// they nest, and how much indentation pretty-printing would add. Counting stops once size passes the
// limit it was given, so measuring costs at most that much, and a value that contains itself (set can
// build one) is simply over the limit.
type extent struct {
	size, nodes, depth, indent int
}

func measure(v any, limit int) extent {
	m := measurer{limit: limit}
	m.walk(v, 1)
	return m.extent
}

// measureAll measures values together, as a function's arguments are.
func measureAll(vs []any, limit int) extent {
	m := measurer{limit: limit}
	for _, v := range vs {
		m.walk(v, 1)
	}
	return m.extent
}

type measurer struct {
	extent
	limit int
}

func (m *measurer) full() bool { return m.size > m.limit || m.depth > MaxDepth }

func (m *measurer) node(depth, bytes int) {
	m.size += nodeBytes + bytes
	m.nodes++
	m.indent += 2 * depth
	if depth > m.depth {
		m.depth = depth
	}
}

// walk has fast paths for what YAML, JSON and sprig produce and falls back to reflection.
func (m *measurer) walk(v any, depth int) {
	if m.full() {
		return
	}
	switch t := v.(type) {
	case nil, bool, int, int64, float64:
		m.node(depth, 0)
	case string:
		m.node(depth, len(t))
	case []any:
		m.node(depth, 0)
		for _, e := range t {
			if m.full() {
				return
			}
			m.walk(e, depth+1)
		}
	case map[string]any:
		m.node(depth, 0)
		for k, e := range t {
			if m.full() {
				return
			}
			m.node(depth+1, len(k))
			m.walk(e, depth+1)
		}
	case []string:
		m.node(depth, 0)
		for _, e := range t {
			m.node(depth+1, len(e))
		}
	case reflect.Value:
		m.walkValue(t, depth)
	default:
		m.walkValue(reflect.ValueOf(v), depth)
	}
}

func (m *measurer) walkValue(v reflect.Value, depth int) {
	if m.full() {
		return
	}
	switch v.Kind() {
	case reflect.Invalid:
		m.node(depth, 0)
	case reflect.String:
		m.node(depth, v.Len())
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			m.node(depth, 0)
			return
		}
		if v.Kind() == reflect.Interface && v.Elem().CanInterface() {
			m.walk(v.Elem().Interface(), depth)
			return
		}
		m.walkValue(v.Elem(), depth)
	case reflect.Slice, reflect.Array:
		m.node(depth, 0)
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			m.size += v.Len() // bytes are text
			return
		}
		for i := 0; i < v.Len() && !m.full(); i++ {
			m.walkValue(v.Index(i), depth+1)
		}
	case reflect.Map:
		m.node(depth, 0)
		it := v.MapRange()
		for it.Next() && !m.full() {
			m.walkValue(it.Key(), depth+1)
			m.walkValue(it.Value(), depth+1)
		}
	case reflect.Struct:
		m.node(depth, 0)
		for i := 0; i < v.NumField() && !m.full(); i++ {
			m.walkValue(v.Field(i), depth+1)
		}
	default:
		m.node(depth, 0)
	}
}

// checkResult is checkValue without boxing a string result again.
func checkResult(fn string, v reflect.Value) (int, error) {
	if v.Kind() == reflect.String {
		if v.Len() > MaxOutput {
			return 0, overLimit(fn, "%d characters is over %s", v.Len(), outputLimit)
		}
		return v.Len(), nil
	}
	return checkValue(fn, v.Interface())
}

// checkValue refuses a value over MaxOutput or nested deeper than MaxDepth, and reports its size.
func checkValue(fn string, v any) (int, error) {
	if s, ok := v.(string); ok {
		if len(s) > MaxOutput {
			return 0, overLimit(fn, "%d characters is over %s", len(s), outputLimit)
		}
		return len(s), nil
	}
	e := measure(v, MaxOutput)
	switch {
	case e.depth > MaxDepth:
		return 0, overLimit(fn, "the result nests deeper than the limit of %d levels", MaxDepth)
	case e.size > MaxOutput:
		return 0, overLimit(fn, "the result is over %s (each element counts %d bytes besides its text)", valueLimit, nodeBytes)
	}
	return e.size, nil
}
