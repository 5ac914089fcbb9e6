package tmpl

import (
	"fmt"
	"regexp"
	"strings"
	"text/template/parse"
)

// Functions the rewritten tree calls; templates cannot name them (they are not in parseNames).
const (
	stepFunc = "flotillaStep"     // first in every range body: one step per iteration
	passFunc = "flotillaCompared" // after every comparison and index: one step each
)

// compared are the builtins whose work grows with their arguments (two long strings compare in time
// proportional to their length); each call is charged a step, after it.
var compared = map[string]bool{"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true, "index": true}

var undefinedFunc = regexp.MustCompile(`^(template: .*?:\d+: )function "(\w+)" not defined$`)

// compile parses a template with `${ }` delimiters, refuses what Flotilla does not run (removed
// functions, define, template and block), and rewrites the tree so that every loop iteration and every
// comparison is charged to the render's budget. It returns the names of the functions the template calls.
func compile(name, text string) (*parse.Tree, map[string]bool, error) {
	if n := codeBytes(text); n > MaxCode {
		return nil, nil, overLimit("", "its ${ } expressions take %d bytes, over the limit of %d KiB", n, MaxCode>>10)
	}
	trees, err := parse.Parse(name, text, "${", "}", parseNames)
	if err != nil {
		if m := undefinedFunc.FindStringSubmatch(err.Error()); m != nil && removed[m[2]] != "" {
			return nil, nil, fmt.Errorf("%s%s", m[1], removedError(m[2]))
		}
		return nil, nil, err
	}
	tree := trees[name]
	for other, t := range trees {
		if other != name {
			return nil, nil, fmt.Errorf("template: %s:%d: define and block are not available in Flotilla templates: "+
				"a values file is one template", name, lineOf(text, t.Root.Position()))
		}
	}
	r := rewriter{tree: tree, text: text, used: map[string]bool{}}
	r.list(tree.Root)
	if r.err != nil {
		return nil, nil, r.err
	}
	return tree, r.used, nil
}

func lineOf(text string, pos parse.Pos) int {
	return 1 + strings.Count(text[:min(int(pos), len(text))], "\n")
}

type rewriter struct {
	tree *parse.Tree
	text string
	used map[string]bool
	err  error
}

func (r *rewriter) fail(pos parse.Pos, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("template: %s:%d: %s", r.tree.ParseName, lineOf(r.text, pos), fmt.Sprintf(format, args...))
	}
}

func (r *rewriter) list(l *parse.ListNode) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			r.pipe(n.Pipe)
		case *parse.IfNode:
			r.branch(&n.BranchNode)
		case *parse.WithNode:
			r.branch(&n.BranchNode)
		case *parse.RangeNode:
			r.branch(&n.BranchNode)
			n.List.Nodes = append([]parse.Node{r.step(n.Pos, n.Line)}, n.List.Nodes...)
		case *parse.TemplateNode:
			r.fail(n.Pos, "template and block are not available in Flotilla templates: a values file is one template")
		}
	}
}

func (r *rewriter) branch(b *parse.BranchNode) {
	r.pipe(b.Pipe)
	r.list(b.List)
	r.list(b.ElseList)
}

func (r *rewriter) pipe(p *parse.PipeNode) {
	if p == nil {
		return
	}
	cmds := make([]*parse.CommandNode, 0, len(p.Cmds))
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			r.arg(a)
		}
		cmds = append(cmds, c)
		if id, ok := c.Args[0].(*parse.IdentifierNode); ok && compared[id.Ident] {
			if id.Ident == "eq" && len(c.Args)-1 > maxCompared {
				r.fail(c.Pos, "eq: %d values is over the limit of %d compared at once; use has", len(c.Args)-1, maxCompared)
			}
			cmds = append(cmds, r.call(passFunc, c.Pos))
		}
	}
	p.Cmds = cmds
}

func (r *rewriter) arg(a parse.Node) {
	switch a := a.(type) {
	case *parse.IdentifierNode:
		r.used[a.Ident] = true
	case *parse.PipeNode:
		r.pipe(a)
	case *parse.ChainNode:
		r.arg(a.Node)
	}
}

func (r *rewriter) call(fn string, pos parse.Pos) *parse.CommandNode {
	id := parse.NewIdentifier(fn).SetTree(r.tree).SetPos(pos)
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{id}}
}

// step is `${ flotillaStep }`, placed at pos so that errors name the range's line.
func (r *rewriter) step(pos parse.Pos, line int) *parse.ActionNode {
	pipe := &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Line: line, Cmds: []*parse.CommandNode{r.call(stepFunc, pos)}}
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Line: line, Pipe: pipe}
}

// codeBytes counts the bytes of a text's `${ }` actions, delimiters included, skipping quoted strings and
// comments as text/template's lexer does, so a "}" inside a string cannot end the count early. Text
// outside actions costs its length to parse; actions cost many times theirs.
func codeBytes(text string) int {
	n := 0
	for {
		i := strings.Index(text, "${")
		if i < 0 {
			return n
		}
		end := actionEnd(text[i:])
		n += end
		text = text[i+end:]
	}
}

func actionEnd(s string) int {
	for i := 2; i < len(s); {
		switch c := s[i]; {
		case c == '}':
			return i + 1
		case c == '"' || c == '\'':
			i = skipQuoted(s, i)
		case c == '`':
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				return len(s)
			}
			i += j + 2
		case c == '/' && strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return len(s)
			}
			i += j + 4
		default:
			i++
		}
	}
	return len(s)
}

func skipQuoted(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i + 1
		case '\n':
			return i
		}
	}
	return len(s)
}
