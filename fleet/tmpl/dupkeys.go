package tmpl

import (
	"fmt"

	yaml3 "go.yaml.in/yaml/v3"
)

// Helm and Fleet read values with the last of two equal keys winning, silently: in a values file that
// is a mistake (a merge gone wrong, a key edited in one place only), so Flotilla refuses it. sigs.k8s.io
// /yaml's strict mode would too, but it also refuses overriding a key merged in with `<<: *anchor`,
// which is how YAML is meant to be used; so the check walks the document itself.
type duplicateKeyError struct {
	key         string
	line, first int
	rendered    bool // the line is in the rendered text, not in the source
}

func (e *duplicateKeyError) Error() string { return e.describe(false) }

func (e *duplicateKeyError) describe(inline bool) string {
	msg := fmt.Sprintf("key %q is set twice", e.key)
	if inline {
		return msg
	}
	where := fmt.Sprintf("line %d", e.line)
	if e.rendered {
		where += " of the rendered values"
	}
	return fmt.Sprintf("%s: %s (first at line %d)", where, msg, e.first)
}

// duplicateKey finds the first mapping key a YAML text sets twice. A text that does not parse is not
// its business: the values parser reports that.
func duplicateKey(text []byte) *duplicateKeyError {
	var doc yaml3.Node
	if err := yaml3.Unmarshal(text, &doc); err != nil {
		return nil
	}
	return findDuplicate(&doc)
}

func findDuplicate(n *yaml3.Node) *duplicateKeyError {
	if n.Kind == yaml3.MappingNode {
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml3.ScalarNode || k.Tag == "!!merge" {
				continue
			}
			if first, ok := seen[k.Value]; ok {
				return &duplicateKeyError{key: k.Value, line: k.Line, first: first}
			}
			seen[k.Value] = k.Line
		}
	}
	for _, c := range n.Content {
		if d := findDuplicate(c); d != nil {
			return d
		}
	}
	return nil
}

// renderedDuplicate checks rendered values, naming the source's line when the source shows the same key
// twice itself.
func renderedDuplicate(source, rendered string) *duplicateKeyError {
	d := duplicateKey([]byte(rendered))
	if d == nil {
		return nil
	}
	if s := duplicateKey([]byte(source)); s != nil && s.key == d.key {
		return s
	}
	d.rendered = true
	return d
}
