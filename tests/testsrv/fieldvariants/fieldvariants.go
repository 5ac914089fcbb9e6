// Package fieldvariants makes, for every field reachable in a value, a copy of the value with that one
// field changed: a test that a key, a digest or a comparison covers every field of its input keeps
// covering the fields added after it was written.
package fieldvariants

import (
	"fmt"
	"reflect"
	"strings"
)

// maxDepth bounds the walk through nested structs; deeper fields are changed as a whole (a zero struct
// set where there was none).
const maxDepth = 6

// Of returns, by field path (name.Field.Sub), a copy of v with that field alone set to a non-zero value.
// It walks exported fields through structs and pointers to structs; a slice, map or other value is one
// field. Paths listed in skip, and everything under them, are left out.
func Of(v any, name string, skip ...string) map[string]any {
	out := map[string]any{}
	root := reflect.ValueOf(v)
	var walk func(path []int, t reflect.Type, prefix string, depth int)
	walk = func(path []int, t reflect.Type, prefix string, depth int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			p := prefix + "." + f.Name
			if skipped(p, skip) {
				continue
			}
			fieldPath := append(append([]int(nil), path...), i)
			ft := f.Type
			if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && depth < maxDepth && ft.NumField() > 0 {
				walk(fieldPath, ft, p, depth+1)
				continue
			}
			cp := reflect.New(root.Type()).Elem()
			cp.Set(root)
			setNonZero(reach(cp, fieldPath))
			out[p] = cp.Interface()
		}
	}
	t := root.Type()
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("fieldvariants: %s is not a struct", t))
	}
	walk(nil, t, name, 0)
	return out
}

func skipped(p string, skip []string) bool {
	for _, s := range skip {
		if p == s || strings.HasPrefix(p, s+".") {
			return true
		}
	}
	return false
}

// reach follows path from v, copying every struct a pointer on the way points to, so that setting the
// field changes only the copy.
func reach(v reflect.Value, path []int) reflect.Value {
	for _, i := range path {
		if v.Kind() == reflect.Pointer {
			fresh := reflect.New(v.Type().Elem())
			if !v.IsNil() {
				fresh.Elem().Set(v.Elem())
			}
			v.Set(fresh)
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v
}

// setNonZero sets v to a value other than its zero and, for a value already set, other than it.
func setNonZero(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1.5)
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		setNonZero(e)
		v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, v.Len()+1), append(elems(v), e)...))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			m.SetMapIndex(k, v.MapIndex(k))
		}
		k := reflect.New(v.Type().Key()).Elem()
		setNonZero(k)
		k = uniqueKey(m, k)
		e := reflect.New(v.Type().Elem()).Elem()
		setNonZero(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		if !v.IsNil() {
			e.Elem().Set(v.Elem())
		}
		setNonZero(e.Elem())
		v.Set(e)
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	case reflect.Struct:
		// A struct past maxDepth, or one without exported fields (time.Time): its first settable field.
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).CanSet() {
				setNonZero(v.Field(i))
				return
			}
		}
		panic(fmt.Sprintf("fieldvariants: cannot change a %s", v.Type()))
	default:
		panic(fmt.Sprintf("fieldvariants: cannot change a %s", v.Type()))
	}
}

func elems(v reflect.Value) []reflect.Value {
	out := make([]reflect.Value, v.Len())
	for i := range out {
		out[i] = v.Index(i)
	}
	return out
}

func uniqueKey(m, k reflect.Value) reflect.Value {
	for m.MapIndex(k).IsValid() {
		setNonZero(k)
	}
	return k
}
