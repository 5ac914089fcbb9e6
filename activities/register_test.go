package activities

import (
	"encoding/base64"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
)

// Workflows call activities by their names in api, and the worker runs whatever Register put under those
// names: no compiler connects the two. An activity a workflow calls that is not registered under exactly
// that name would leave every workflow that schedules it retrying forever, so this reads the calls from
// the workflows' source and the names from recorded histories, and checks each against Register.
func TestEveryActivityTheWorkflowsCallIsRegistered(t *testing.T) {
	registered := registeredNames(t)
	apiNames := constants(t, filepath.Join("..", "api"))
	var activityNames []string
	for ident, value := range apiNames {
		if strings.HasPrefix(ident, "Activity") {
			activityNames = append(activityNames, value)
		}
	}
	require.ElementsMatch(t, activityNames, keys(registered), "Register registers exactly the activities api names")

	called := activityCalls(t, filepath.Join("..", "workflows"), apiNames)
	require.NotEmpty(t, called, "no activity call found in the workflows' source")
	for name, where := range called {
		require.Contains(t, registered, name, "%s calls activity %q, which Register does not register", where, name)
	}

	recorded := recordedActivities(t, filepath.Join("..", "workflows", "testdata"))
	require.NotEmpty(t, recorded, "no activity found in the recorded histories")
	for name, file := range recorded {
		require.Contains(t, registered, name, "history %s holds activity %q, which Register does not register", file, name)
	}
}

type nameRegistry map[string]any

func (r nameRegistry) RegisterActivityWithOptions(fn any, o activity.RegisterOptions) {
	if _, dup := r[o.Name]; dup || o.Name == "" {
		panic("activity registered twice or without a name: " + strconv.Quote(o.Name))
	}
	r[o.Name] = fn
}

// registeredNames are the activities the worker registers and those only an agent runs (KeepAgent), each
// registered by the process that polls the queue its workflows send it to.
func registeredNames(t *testing.T) nameRegistry {
	r := nameRegistry{}
	(&Activities{}).Register(r)
	agent := nameRegistry{}
	(&Activities{}).RegisterAgent(agent)
	for name, fn := range agent {
		if _, both := r[name]; !both {
			r[name] = fn
		}
	}
	return r
}

// constants reads the string constants of the package in dir: identifier → value.
func constants(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	for _, f := range parseDir(t, dir) {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, err := strconv.Unquote(lit.Value)
						require.NoError(t, err)
						out[name.Name] = v
					}
				}
			}
		}
	}
	return out
}

// activityCalls finds every workflow.ExecuteActivity and workflow.ExecuteLocalActivity in dir and
// resolves the activity, which must be named by a constant of api: activity name → where it is called.
func activityCalls(t *testing.T, dir string, apiNames map[string]string) map[string]string {
	fset := token.NewFileSet()
	called := map[string]string{}
	for _, f := range parseDirWith(t, fset, dir) {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isWorkflowCall(call.Fun, "ExecuteActivity", "ExecuteLocalActivity") {
				return true
			}
			where := fset.Position(call.Pos()).String()
			name, ok := apiName(call.Args, apiNames)
			require.True(t, ok, "%s: an activity is called by something other than a string constant of api", where)
			called[name] = where
			return true
		})
	}
	return called
}

// apiName resolves the activity argument of an activity call when it is a constant of api.
func apiName(args []ast.Expr, apiNames map[string]string) (string, bool) {
	if len(args) < 2 {
		return "", false
	}
	sel, ok := args[1].(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "api" {
		return "", false
	}
	name, ok := apiNames[sel.Sel.Name]
	return name, ok
}

func isWorkflowCall(fun ast.Expr, names ...string) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || pkg.Name != "workflow" {
		return false
	}
	for _, n := range names {
		if sel.Sel.Name == n {
			return true
		}
	}
	return false
}

// recordedActivities lists the activity types of scheduled activities and local-activity markers in the
// recorded histories of dir: activity name → file.
func recordedActivities(t *testing.T, dir string) map[string]string {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	out := map[string]string{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var h struct {
			Events []struct {
				Scheduled *struct {
					ActivityType struct{ Name string } `json:"activityType"`
				} `json:"activityTaskScheduledEventAttributes"`
				Marker *struct {
					MarkerName string `json:"markerName"`
					Details    map[string]struct {
						Payloads []struct{ Data string } `json:"payloads"`
					} `json:"details"`
				} `json:"markerRecordedEventAttributes"`
			} `json:"events"`
		}
		require.NoError(t, json.Unmarshal(data, &h), file)
		for _, e := range h.Events {
			if e.Scheduled != nil {
				out[e.Scheduled.ActivityType.Name] = file
			}
			if e.Marker != nil && e.Marker.MarkerName == "LocalActivity" {
				for _, p := range e.Marker.Details["data"].Payloads {
					raw, err := base64.StdEncoding.DecodeString(p.Data)
					require.NoError(t, err, file)
					var m struct{ ActivityType string }
					require.NoError(t, json.Unmarshal(raw, &m), file)
					out[m.ActivityType] = file
				}
			}
		}
	}
	return out
}

func parseDir(t *testing.T, dir string) map[string]*ast.File {
	return parseDirWith(t, token.NewFileSet(), dir)
}

// parseDirWith parses the non-test Go files of dir.
func parseDirWith(t *testing.T, fset *token.FileSet, dir string) map[string]*ast.File {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	out := map[string]*ast.File{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		require.NoError(t, err)
		out[p] = f
	}
	require.NotEmpty(t, out, "no Go files in %s", dir)
	return out
}

func keys(m nameRegistry) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
