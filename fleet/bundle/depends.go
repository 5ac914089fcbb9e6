package bundle

import (
	"fmt"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// checkDependsOn refuses dependsOn entries Fleet's `fleet apply` refuses (neither name nor selector, a
// state that is not one of Fleet's) and selectors that cannot be parsed, naming the entry and its line:
// a bundle that would wait for something it can never match is better stopped where it is written.
func checkDependsOn(file string, doc *yaml.Node, deps []fleet.Dependency) error {
	for i, d := range deps {
		entry := fmt.Sprintf("dependsOn[%d]", i)
		switch {
		case d.Name == "" && d.Selector == nil:
			return &LoadError{File: file, Line: dependsOnLine(doc, i, ""), Err: fmt.Errorf("%s: set name or selector", entry)}
		case d.Selector != nil:
			if _, err := metav1.LabelSelectorAsSelector(d.Selector); err != nil {
				return &LoadError{File: file, Line: dependsOnLine(doc, i, "selector"), Err: fmt.Errorf("%s.selector: %v", entry, err)}
			}
		}
		for j, s := range d.AcceptedStates {
			if !slices.Contains(fleet.States, s) {
				return &LoadError{File: file, Line: dependsOnLine(doc, i, "acceptedStates"),
					Err: fmt.Errorf("%s.acceptedStates[%d]: unknown state %q (want one of %s)", entry, j, s, strings.Join(fleet.States, ", "))}
			}
		}
	}
	return nil
}

// dependsOnLine is the line of dependsOn entry i, or of its key when key is set; 0 when the document does
// not hold it where expected (a merge key or an alias built it).
func dependsOnLine(doc *yaml.Node, i int, key string) int {
	seq := valueOf(doc, "dependsOn")
	if seq == nil || seq.Kind != yaml.SequenceNode || i >= len(seq.Content) {
		return lineOf(doc, "dependsOn")
	}
	item := seq.Content[i]
	if key != "" {
		if n := keyNode(item, key); n != nil {
			return n.Line
		}
	}
	return item.Line
}

// valueOf is the value of a top-level key of a document, matched as encoding/json matches keys.
func valueOf(doc *yaml.Node, key string) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if k := keyNode(n, key); k != nil {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i] == k {
				return n.Content[i+1]
			}
		}
	}
	return nil
}

func keyNode(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if strings.EqualFold(m.Content[i].Value, key) {
			return m.Content[i]
		}
	}
	return nil
}
