package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, args ...string) (config, error) {
	t.Helper()
	fs := flag.NewFlagSet("flotilla-worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return parseFlags(fs, args)
}

// One installation's worker polls the queue its operator named, on the command line or in the
// environment the CLI reads too; with neither it is Flotilla's own queue.
func TestTheWorkerPollsTheTaskQueueOfItsFlagOrEnvironment(t *testing.T) {
	t.Setenv("FLOTILLA_TASK_QUEUE", "")
	c, err := parse(t)
	require.NoError(t, err)
	require.Equal(t, "flotilla", c.taskQueue)

	t.Setenv("FLOTILLA_TASK_QUEUE", "flotilla-staging")
	c, err = parse(t)
	require.NoError(t, err)
	require.Equal(t, "flotilla-staging", c.taskQueue)

	c, err = parse(t, "--task-queue", "flotilla-prod")
	require.NoError(t, err)
	require.Equal(t, "flotilla-prod", c.taskQueue, "the flag wins over the environment")
}

// Metrics are off unless asked for, on the command line or in the environment.
func TestTheWorkerServesMetricsWhereItIsTold(t *testing.T) {
	t.Setenv("FLOTILLA_METRICS_LISTEN", "")
	c, err := parse(t)
	require.NoError(t, err)
	require.Empty(t, c.metricsListen)

	t.Setenv("FLOTILLA_METRICS_LISTEN", ":9090")
	c, err = parse(t)
	require.NoError(t, err)
	require.Equal(t, ":9090", c.metricsListen)

	c, err = parse(t, "--metrics-listen", "127.0.0.1:9091")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9091", c.metricsListen, "the flag wins over the environment")
}

// The Temporal namespace is --temporal-namespace, as in the CLI, whose -n/--namespace is a GitRepo's
// workspace; --namespace is no flag of the worker, so a script written for the old name stops at once.
func TestTheWorkerTakesTheTemporalNamespaceAsTemporalNamespace(t *testing.T) {
	t.Setenv("TEMPORAL_NAMESPACE", "")
	c, err := parse(t)
	require.NoError(t, err)
	require.Equal(t, "default", c.temporalNamespace)
	t.Setenv("TEMPORAL_NAMESPACE", "prod")
	c, err = parse(t)
	require.NoError(t, err)
	require.Equal(t, "prod", c.temporalNamespace)
	c, err = parse(t, "--temporal-namespace", "staging")
	require.NoError(t, err)
	require.Equal(t, "staging", c.temporalNamespace)
	_, err = parse(t, "--namespace", "staging")
	require.EqualError(t, err, "flag provided but not defined: -namespace")
}

// A queue name ends up in workflow IDs and visibility queries: one that would break either stops the
// worker before it connects, naming where the name came from.
func TestTheWorkerRefusesATaskQueueNameThatWouldBreakIDsOrQueries(t *testing.T) {
	t.Setenv("FLOTILLA_TASK_QUEUE", "")
	_, err := parse(t, "--task-queue", "team/a")
	require.EqualError(t, err, `--task-queue (or FLOTILLA_TASK_QUEUE): task queue "team/a": "/" is not allowed (letters, digits, '.', '_' and '-' are)`)

	t.Setenv("FLOTILLA_TASK_QUEUE", "x' OR 'y")
	_, err = parse(t)
	require.ErrorContains(t, err, `task queue "x' OR 'y": "'" is not allowed`)
}

// --credentials names the store, a file or a folder; --git-credentials, its older name, and both
// environment variables keep working.
func TestTheWorkerTakesCredentialsAndItsOlderName(t *testing.T) {
	t.Setenv("FLOTILLA_CREDENTIALS", "")
	t.Setenv("FLOTILLA_GIT_CREDENTIALS", "")
	c, err := parse(t, "--credentials", "/etc/flotilla/credentials")
	require.NoError(t, err)
	require.Equal(t, "/etc/flotilla/credentials", c.credentials)
	c, err = parse(t, "--git-credentials", "/etc/flotilla/git.yaml")
	require.NoError(t, err)
	require.Equal(t, "/etc/flotilla/git.yaml", c.gitCredentials)

	t.Setenv("FLOTILLA_CREDENTIALS", "/env/credentials")
	t.Setenv("FLOTILLA_GIT_CREDENTIALS", "/env/git.yaml")
	c, err = parse(t)
	require.NoError(t, err)
	require.Equal(t, "/env/credentials", c.credentials)
	require.Equal(t, "/env/git.yaml", c.gitCredentials)
}

// The worker's connection is --address and --temporal-namespace with the TLS and API key flags of
// internal/temporalconn, which the CLI and the agent share.
func TestTheWorkerTakesTheTLSAndAPIKeyFlags(t *testing.T) {
	t.Setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", "/env/ca.pem")
	t.Setenv("FLOTILLA_API_KEY_FILE", "")
	c, err := parse(t, "--address", "ns.tmprl.cloud:7233", "--temporal-namespace", "ns", "--api-key-file", "/run/secrets/temporal-api-key")
	require.NoError(t, err)
	s := c.temporalSettings()
	require.Equal(t, "ns.tmprl.cloud:7233", s.Address)
	require.Equal(t, "ns", s.Namespace)
	require.Equal(t, "/env/ca.pem", s.ServerCAFile)
	require.Equal(t, "/run/secrets/temporal-api-key", s.APIKeyFile)
	_, err = parse(t, "--api-key", "secret")
	require.EqualError(t, err, "flag provided but not defined: -api-key", "a key is never a flag's value")
}

// A container is configured by its environment: every tuning setting has a variable, the flag still
// wins, and a malformed number stops the worker at start instead of silently becoming the default.
func TestTheWorkersSettingsComeFromTheEnvironment(t *testing.T) {
	t.Setenv("FLOTILLA_MAX_CONCURRENT_ACTIVITIES", "64")
	t.Setenv("FLOTILLA_MAX_CONCURRENT_WORKFLOW_TASKS", "32")
	t.Setenv("FLOTILLA_WORKFLOW_CACHE_SIZE", "40000")
	t.Setenv("FLOTILLA_BUNDLE_CONCURRENCY", "4")
	t.Setenv("FLOTILLA_HELM_QPS", "20.5")
	t.Setenv("FLOTILLA_HELM_BURST", "40")
	t.Setenv("FLOTILLA_WEBHOOK_LISTEN", ":8090")
	t.Setenv("FLOTILLA_LOG_LEVEL", "debug")
	t.Setenv("FLOTILLA_CACHE_DIR", "/var/cache/flotilla")
	c, err := parseFlags(flag.NewFlagSet("w", flag.ContinueOnError), []string{"--bundle-concurrency", "2"})
	require.NoError(t, err)
	require.Equal(t, 64, c.maxActivities)
	require.Equal(t, 32, c.maxWorkflowTasks)
	require.Equal(t, 40000, c.workflowCacheSize)
	require.Equal(t, 2, c.bundleConcurrency, "the flag wins over the environment")
	require.Equal(t, 20.5, c.helmQPS)
	require.Equal(t, 40, c.helmBurst)
	require.Equal(t, ":8090", c.webhookListen)
	require.Equal(t, "debug", c.logLevel)
	require.Equal(t, "/var/cache/flotilla", c.cacheDir)

	t.Setenv("FLOTILLA_HELM_BURST", "forty")
	_, err = parseFlags(flag.NewFlagSet("w", flag.ContinueOnError), nil)
	require.EqualError(t, err, `FLOTILLA_HELM_BURST="forty": not a whole number`)
}
