package bundle

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// checkKeys reads fleet.yaml's node tree before it is decoded: a key Fleet does not know is an error (a
// typo there would otherwise be ignored and deploy something else than what was written), a key Fleet
// documents but Flotilla does not act on yet is a warning, and a key written twice in one map is an error.
// It stops at the first error, in document order.
func checkKeys(file string, doc *yaml.Node) (warnings []string, err error) {
	c := &keyChecker{file: file, visited: map[visit]bool{}}
	c.walk(doc, fleetYAMLSchema, "")
	return c.warnings, c.err
}

type keyChecker struct {
	file     string
	warnings []string
	err      error
	// visited bounds the walk: an anchor's content is checked once however many aliases repeat it.
	visited map[visit]bool
}

type visit struct {
	node   *yaml.Node
	schema *schema
}

// firstVisit reports whether an anchor's content is yet to be checked against s, and marks it checked.
func (c *keyChecker) firstVisit(anchor *yaml.Node, s *schema) bool {
	v := visit{anchor, s}
	if c.visited[v] {
		return false
	}
	c.visited[v] = true
	return true
}

func (c *keyChecker) walk(n *yaml.Node, s *schema, path string) {
	if c.err != nil || n == nil {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, child := range n.Content {
			c.walk(child, s, path)
		}
	case yaml.AliasNode:
		if c.firstVisit(n.Alias, s) {
			c.walk(n.Alias, s, path)
		}
	case yaml.MappingNode:
		c.mapping(n, s, path)
	case yaml.SequenceNode:
		var item *schema
		if s != nil && s.keys == nil && !s.free {
			item = s.item
		}
		for i, child := range n.Content {
			c.walk(child, item, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

func (c *keyChecker) mapping(n *yaml.Node, s *schema, path string) {
	known := s != nil && s.keys != nil
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content) && c.err == nil; i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			// `<<: *defaults` merges another map's keys in (YAML 1.1, which Fleet's parser reads too); they
			// are checked where they stand, and the keys written here override them rather than repeat them.
			c.merge(v, s, path)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			c.walk(v, nil, path)
			continue
		}
		id := k.Value
		if known {
			// encoding/json matches struct keys case-insensitively, so these two would fill one field.
			id = strings.ToLower(id)
		}
		if line, dup := first[id]; dup {
			c.fail(k.Line, fmt.Errorf("duplicate key %q%s (first at line %d)", k.Value, in(path), line))
			return
		}
		first[id] = k.Line
		if !known {
			c.walk(v, nil, join(path, k.Value))
			continue
		}
		def := s.lookup(k.Value)
		switch {
		case def == nil:
			msg := fmt.Sprintf("unknown key %q%s", k.Value, in(path))
			if near := s.suggest(k.Value); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			c.fail(k.Line, errors.New(msg))
		case def.unsupported:
			msg := join(path, k.Value) + " is not supported yet and is ignored"
			if def.hint != "" {
				msg += "; " + def.hint
			}
			c.warnings = append(c.warnings, (&LoadError{File: c.file, Line: k.Line, Err: errors.New(msg)}).Error())
		default:
			c.walk(v, def.schema, join(path, k.Value))
		}
	}
}

func (c *keyChecker) merge(v *yaml.Node, s *schema, path string) {
	switch v.Kind {
	case yaml.AliasNode:
		if c.firstVisit(v.Alias, s) {
			c.merge(v.Alias, s, path)
		}
	case yaml.MappingNode:
		c.mapping(v, s, path)
	case yaml.SequenceNode:
		for _, m := range v.Content {
			c.merge(m, s, path)
		}
	}
}

func (c *keyChecker) fail(line int, err error) {
	if c.err == nil {
		c.err = &LoadError{File: c.file, Line: line, Err: err}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func in(path string) string {
	if path == "" {
		return ""
	}
	return " in " + path
}

// suggest names the known key closest to a misspelt one: first among this map's keys, then among the keys
// of the maps it holds (valuesFiles written beside helm rather than inside it).
func (s *schema) suggest(name string) string {
	own := make([]string, 0, len(s.keys))
	var nested []string
	for n, k := range s.keys {
		own = append(own, n)
		if k.schema != nil && k.schema.keys != nil && !k.unsupported {
			for sub := range k.schema.keys {
				nested = append(nested, n+"."+sub)
			}
		}
	}
	if near := closest(name, own, func(c string) string { return c }); near != "" {
		return near
	}
	return closest(name, nested, func(c string) string { return c[strings.LastIndexByte(c, '.')+1:] })
}

// closest returns the candidate whose key is within a small edit distance of name (about one edit per four
// letters), the nearest first and alphabetically among equals; "" when none is that close.
func closest(name string, candidates []string, keyOf func(string) string) string {
	sort.Strings(candidates)
	limit := max(1, len(name)/4)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(name), strings.ToLower(keyOf(c))); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance counts insertions, deletions, substitutions and swaps of neighbours (namespcae → namespace
// is one edit).
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
