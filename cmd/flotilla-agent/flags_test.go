package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, args ...string) (config, error) {
	t.Helper()
	fs := flag.NewFlagSet("flotilla-agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return parseFlags(fs, args)
}

// The Deployment `flotilla agent manifest` prints configures the agent through its environment only.
func TestTheAgentTakesItsSettingsFromTheEnvironment(t *testing.T) {
	t.Setenv("FLOTILLA_CLUSTER", "edge-7")
	t.Setenv("FLOTILLA_WORKSPACE", "stores")
	t.Setenv("TEMPORAL_ADDRESS", "temporal.example.com:7233")
	t.Setenv("TEMPORAL_NAMESPACE", "fleet")
	t.Setenv("FLOTILLA_TASK_QUEUE", "prod")
	t.Setenv("FLOTILLA_MAX_CONCURRENT_ACTIVITIES", "3")
	t.Setenv("FLOTILLA_HELM_QPS", "12.5")
	t.Setenv("FLOTILLA_METRICS_LISTEN", ":9090")
	c, err := parse(t)
	require.NoError(t, err)
	require.Equal(t, "edge-7", c.cluster)
	require.Equal(t, "stores", c.workspace)
	require.Equal(t, "temporal.example.com:7233", c.address)
	require.Equal(t, "fleet", c.temporalNamespace)
	require.Equal(t, "prod", c.taskQueue)
	require.Equal(t, 3, c.maxActivities)
	require.Equal(t, 12.5, c.helmQPS)
	require.Equal(t, ":9090", c.metricsListen)
	require.Equal(t, DefaultHelmBurst, c.helmBurst, "an absent setting takes its default")

	c, err = parse(t, "--max-concurrent-activities", "5")
	require.NoError(t, err)
	require.Equal(t, 5, c.maxActivities, "a flag wins over the environment")
}

func TestBadAgentSettingsAreRefusedAtStartNamingTheSetting(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{args: nil, want: "--cluster (or FLOTILLA_CLUSTER) is required"},
		{args: []string{"--cluster", "Edge_7"}, want: `--cluster "Edge_7": must be a DNS label`},
		{args: []string{"--cluster", "e", "--max-concurrent-activities", "0"}, want: "--max-concurrent-activities 0: must be at least 1"},
		{env: map[string]string{"FLOTILLA_HELM_QPS": "fast"}, args: []string{"--cluster", "e"}, want: `FLOTILLA_HELM_QPS="fast": not a number`},
		{args: []string{"--cluster", "e", "--task-queue", "a/b"}, want: "--task-queue (or FLOTILLA_TASK_QUEUE)"},
	} {
		t.Setenv("FLOTILLA_CLUSTER", "")
		t.Setenv("FLOTILLA_HELM_QPS", "")
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		_, err := parse(t, tc.args...)
		require.ErrorContains(t, err, tc.want)
	}
}
