package fleetcrd

import (
	"encoding/json"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// schemaOf is the structural OpenAPI schema of a Go type as encoding/json writes it: the same types
// `flotilla apply` decodes strictly, so the API server refuses (kubectl) or prunes exactly the fields
// Flotilla would not read. skip names JSON fields of t (top level only) left out of the schema.
func schemaOf(t reflect.Type, skip ...string) apiextensionsv1.JSONSchemaProps {
	return walk(t, map[reflect.Type]bool{}, skip)
}

var (
	intOrString = reflect.TypeOf(intstr.IntOrString{})
	rawJSON     = reflect.TypeOf(json.RawMessage{})
)

func walk(t reflect.Type, seen map[reflect.Type]bool, skip []string) apiextensionsv1.JSONSchemaProps {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case intOrString:
		return apiextensionsv1.JSONSchemaProps{XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}}
	case rawJSON:
		return anything()
	}
	switch t.Kind() {
	case reflect.String:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}
	case reflect.Bool:
		return apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return apiextensionsv1.JSONSchemaProps{Type: "integer"}
	case reflect.Float32, reflect.Float64:
		return apiextensionsv1.JSONSchemaProps{Type: "number"}
	case reflect.Interface:
		return anything()
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "byte"}
		}
		items := walk(t.Elem(), seen, nil)
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
	case reflect.Map:
		v := walk(t.Elem(), seen, nil)
		if v.XPreserveUnknownFields != nil {
			return anythingObject()
		}
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &v}}
	case reflect.Struct:
		if seen[t] {
			// A type that contains itself has no finite structural schema: below the first level, any object.
			return anythingObject()
		}
		seen[t] = true
		defer delete(seen, t)
		props := map[string]apiextensionsv1.JSONSchemaProps{}
		fields(t, seen, skip, props)
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	}
	return anything()
}

func fields(t reflect.Type, seen map[reflect.Type]bool, skip []string, props map[string]apiextensionsv1.JSONSchemaProps) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			fields(ft, seen, skip, props)
			continue
		}
		if name == "" {
			name = f.Name
		}
		if contains(skip, name) {
			continue
		}
		props[name] = walk(f.Type, seen, nil)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func anything() apiextensionsv1.JSONSchemaProps {
	yes := true
	return apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: &yes}
}

func anythingObject() apiextensionsv1.JSONSchemaProps {
	yes := true
	return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}
}
