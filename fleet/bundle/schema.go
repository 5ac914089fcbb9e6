package bundle

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// schema is what one place of fleet.yaml may hold. The keys Flotilla implements come from the Go types in
// package fleet, so a field added there is accepted here without a second list to keep in step.
type schema struct {
	// keys holds the keys of a map with known keys (a struct), by their canonical spelling.
	keys map[string]*key
	// item is the schema of each entry of a list.
	item *schema
	// free marks a map whose keys are the user's own (helm.values, labels): any key goes.
	free bool
}

type key struct {
	name   string
	schema *schema // nil for a scalar
	// unsupported is Fleet's documentation of a key Flotilla reads past: a warning, not an error.
	unsupported bool
	hint        string
}

// unsupported lists, by the Go type whose map they belong to, the keys of Fleet's fleet.yaml schema
// (rancher/fleet schemas/fleet.yaml.json) that Flotilla does not act on yet. A key listed here is warned
// about even when its field exists in package fleet. Implementing one of them means removing it here.
var unsupported = map[reflect.Type]map[string]string{
	reflect.TypeOf(fleet.FleetYAML{}): {
		"imageScans": "",
		"targets":    "targetCustomizations does the same",
	},
	reflect.TypeOf(fleet.BundleDeploymentOptions{}): {
		"createNamespace":     "",
		"downstreamResources": "",
	},
	// Fleet reads deleteNamespace from the top of fleet.yaml only (the Bundle's spec, not its options).
	reflect.TypeOf(fleet.BundleTarget{}): {
		"deleteNamespace": "set it at the top of fleet.yaml, where it applies to the bundle on every cluster",
	},
	reflect.TypeOf(fleet.HelmOptions{}): {
		"disableDNS": "",
	},
}

var jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// fleetYAMLSchema describes fleet.yaml.
var fleetYAMLSchema = schemaOf(reflect.TypeOf(fleet.FleetYAML{}))

func schemaOf(t reflect.Type) *schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil // decodes itself from a scalar (intstr.IntOrString: 10% or 3)
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &schema{keys: map[string]*key{}}
		addFields(s, t)
		return s
	case reflect.Slice, reflect.Array:
		return &schema{item: schemaOf(t.Elem())}
	case reflect.Map, reflect.Interface:
		return &schema{free: true}
	}
	return nil
}

// addFields adds a struct's JSON keys to s, inlining embedded structs as encoding/json does.
func addFields(s *schema, t reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(s, ft)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		s.keys[name] = &key{name: name, schema: schemaOf(f.Type)}
	}
	for name, hint := range unsupported[t] {
		if k, ok := s.keys[name]; ok {
			k.unsupported, k.hint = true, hint
			continue
		}
		s.keys[name] = &key{name: name, unsupported: true, hint: hint}
	}
}

// lookup finds a key by its exact spelling, else case-insensitively: encoding/json (and so Fleet, through
// sigs.k8s.io/yaml) matches keys that way, so `ReleaseName` has always worked and keeps working.
func (s *schema) lookup(name string) *key {
	if k, ok := s.keys[name]; ok {
		return k
	}
	for n, k := range s.keys {
		if strings.EqualFold(n, name) {
			return k
		}
	}
	return nil
}
