package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// One installation's CLI reads, with the same flag and variable as its worker, the task queue that sets
// the installation apart; with neither it is Flotilla's own queue.
func TestTheCLIUsesTheTaskQueueOfItsFlagOrEnvironment(t *testing.T) {
	queue := func(args ...string) string {
		root := newRoot()
		require.NoError(t, root.ParseFlags(args))
		return root.PersistentFlags().Lookup("task-queue").Value.String()
	}
	t.Setenv("FLOTILLA_TASK_QUEUE", "")
	require.Equal(t, "flotilla", queue())
	t.Setenv("FLOTILLA_TASK_QUEUE", "flotilla-staging")
	require.Equal(t, "flotilla-staging", queue())
	require.Equal(t, "flotilla-prod", queue("--task-queue", "flotilla-prod"), "the flag wins over the environment")
}

// A name that would break workflow IDs or visibility queries stops every command before it connects.
func TestTheCLIRefusesATaskQueueNameThatWouldBreakIDsOrQueries(t *testing.T) {
	t.Setenv("FLOTILLA_TASK_QUEUE", "team a")
	_, _, err := flotilla(t, "--address", "127.0.0.1:1", "get", "gitrepos")
	require.EqualError(t, err, `--task-queue (or FLOTILLA_TASK_QUEUE): task queue "team a": " " is not allowed (letters, digits, '.', '_' and '-' are)`)
}

// -n/--namespace is the workspace, as in kubectl and Fleet's CLI; the Temporal namespace is
// --temporal-namespace (env TEMPORAL_NAMESPACE), as in the worker.
func TestTheCLITakesTheWorkspaceAsNamespaceAndTemporalsAsTemporalNamespace(t *testing.T) {
	parse := func(args ...string) *globals {
		g := &globals{}
		root := newRootWith(g)
		require.NoError(t, root.ParseFlags(args))
		return g
	}
	t.Setenv("TEMPORAL_NAMESPACE", "")
	g := parse()
	require.Equal(t, "default", g.temporalNamespace)
	require.Equal(t, "", g.namespace)
	require.Equal(t, "fleet-default", g.workspace(), "no -n is fleet-default")
	require.Equal(t, "gitrepo/web", g.key("web").WorkflowID())

	g = parse("-n", "team-a")
	require.Equal(t, "team-a", g.workspace())
	require.Equal(t, "gitrepo/team-a/web", g.key("web").WorkflowID())
	require.Equal(t, "default", g.temporalNamespace, "-n is not Temporal's")
	require.Equal(t, "team-b", parse("--namespace", "team-b").workspace())

	t.Setenv("TEMPORAL_NAMESPACE", "prod")
	require.Equal(t, "prod", parse("-n", "team-a").temporalNamespace)
	require.Equal(t, "staging", parse("--temporal-namespace", "staging").temporalNamespace)
}

// A namespace goes into workflow IDs: one that is no DNS label stops every command before it connects.
func TestTheCLIRefusesANamespaceThatIsNoDNSLabel(t *testing.T) {
	_, _, err := flotilla(t, "--address", "127.0.0.1:1", "-n", "team/a", "status", "web")
	require.EqualError(t, err, `-n/--namespace: namespace "team/a": must be a DNS label (lowercase letters, digits, '-'; at most 63 characters)`)
}

// -A/--all-namespaces lists every workspace's, where a command lists.
func TestListingsTakeAllNamespaces(t *testing.T) {
	root := newRoot()
	for _, path := range [][]string{{"get", "gitrepos"}, {"cluster", "list"}} {
		cmd, _, err := root.Find(path)
		require.NoError(t, err)
		f := cmd.Flags().ShorthandLookup("A")
		require.NotNil(t, f, "%v", path)
		require.Equal(t, "all-namespaces", f.Name)
	}
}

// `apply` takes each document's metadata.namespace, or -n when it names none, as kubectl does; -n and a
// document that disagree are an error naming both, since either choice would surprise someone.
func TestApplyTakesTheNamespaceOfTheDocumentOrOfN(t *testing.T) {
	settle := func(flag, doc string) (string, error) {
		g := &globals{namespace: flag}
		m := fleet.ObjectMeta{Name: "web", Namespace: doc}
		err := g.documentNamespace(&m)
		return m.Namespace, err
	}
	for _, tc := range []struct{ flag, doc, want string }{
		{"", "", ""},
		{"", "team-a", "team-a"},
		{"team-a", "", "team-a"},
		{"team-a", "team-a", "team-a"},
		{"fleet-default", "", "fleet-default"},
	} {
		got, err := settle(tc.flag, tc.doc)
		require.NoError(t, err, "%+v", tc)
		require.Equal(t, tc.want, got, "%+v", tc)
	}
	_, err := settle("team-b", "team-a")
	require.EqualError(t, err, `metadata.namespace is "team-a" but -n/--namespace is "team-b": give the namespace once, or the same in both`)
	_, err = settle("", "Team_A")
	require.EqualError(t, err, `metadata.namespace "Team_A": must be a DNS label (lowercase letters, digits, '-'; at most 63 characters)`)
}

// The CLI takes the worker's TLS and API key flags and stops on a bad one before it connects, naming it.
func TestTheCLITakesTheTLSFlagsOfTheWorker(t *testing.T) {
	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", "")
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", "")
	missing := filepath.Join(t.TempDir(), "tls.crt")
	_, _, err := flotilla(t, "--address", "127.0.0.1:1", "--tls-cert-file", missing, "--tls-key-file", missing, "get", "gitrepos")
	require.EqualError(t, err, "--tls-cert-file "+missing+": no such file or directory")
	_, _, err = flotilla(t, "--address", "127.0.0.1:1", "--tls-cert-file", missing, "get", "gitrepos")
	require.EqualError(t, err, "--tls-cert-file and --tls-key-file go together: give both or neither")
}
