package chartcheck

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/tests/env/needs"
)

// cpuBombLimits cut the CPU limit to a few seconds, so a test does not spend 30 CPU-seconds on a bomb that
// only burns CPU; the mechanism (RLIMIT_CPU, the kernel's kill) is the worker's. Memory bombs run against
// the worker's own limits.
func cpuBombLimits() Limits {
	l := DefaultLimits()
	l.CPU = 3 * time.Second
	return l
}

func requireLimit(t *testing.T, err error, want Limit, message string) {
	t.Helper()
	var le *LimitError
	require.True(t, errors.As(err, &le), "want a limit error, got %v", err)
	require.Equal(t, want, le.Limit, "%v", err)
	require.EqualError(t, err, message)
}

func TestARangeOverIntBombIsStoppedAtTheCPULimit(t *testing.T) {
	needs.Long(t, "a template bomb run to the CPU limit")
	c := newTestChecker(t, cpuBombLimits())
	err := c.Check(context.Background(), install(chartWith(t, "{{ range 1000000000 }}x{{ end }}\n"), nil))
	requireLimit(t, err, LimitCPU, `chart "web": rendering exceeded the 3s CPU time limit for chart templates`)
}

// A string that fits in memory once, but not with its copies in the rendered output, is stopped at a limit
// and the error names which. Which one is up to Go's collector and the machine's load: when an allocation
// goes over the memory limit the runtime dies at once (the doubling loop below), but a heap that climbs to
// just under it keeps the collector running, soft-limited, until the CPU limit ends it. Either way nothing
// renders and the worker is unharmed; a CPU limit of a few seconds keeps the test short.
func TestARepeatBombIsStoppedAtTheMemoryOrTheCPULimit(t *testing.T) {
	needs.Long(t, "a template bomb run to the memory or CPU limit")
	c := newTestChecker(t, cpuBombLimits())
	err := c.Check(context.Background(), install(chartWith(t, "data: {{ repeat 200000000 \"x\" }}\n"), nil))
	var le *LimitError
	require.True(t, errors.As(err, &le), "want a limit error, got %v", err)
	switch le.Limit {
	case LimitMemory:
		require.EqualError(t, err, `chart "web": rendering exceeded the 1 GiB memory limit for chart templates`)
	case LimitCPU:
		require.EqualError(t, err, `chart "web": rendering exceeded the 3s CPU time limit for chart templates`)
	default:
		t.Fatalf("stopped by the %v, not by the memory or the CPU limit: %v", le.Limit, err)
	}
}

func TestADoublingLoopIsStoppedAtTheMemoryLimit(t *testing.T) {
	c := newTestChecker(t, DefaultLimits())
	tpl := "{{ $s := \"xx\" }}{{ range 40 }}{{ $s = print $s $s }}{{ end }}data: {{ $s }}\n"
	err := c.Check(context.Background(), install(chartWith(t, tpl), nil))
	requireLimit(t, err, LimitMemory, `chart "web": rendering exceeded the 1 GiB memory limit for chart templates`)
}

// A chart may render within memory and CPU and still be far too big to install: the parent stops reading.
func TestAnAnswerOverTheOutputLimitIsRefused(t *testing.T) {
	l := DefaultLimits()
	l.Output = 1 << 20
	c := newTestChecker(t, l)
	err := c.Check(context.Background(), install(chartWith(t, "data: {{ repeat 2000000 \"x\" }}\n"), nil))
	requireLimit(t, err, LimitOutput, `chart "web": rendering exceeded the 1 MiB limit on rendered output for chart templates`)
}

// The worker survives every bomb above: it goes on checking (and passing) a normal chart with the same
// Checker, and no child is left running (newTestChecker's cleanup).
func TestTheParentGoesOnAfterABomb(t *testing.T) {
	c := newTestChecker(t, DefaultLimits())
	err := c.Check(context.Background(), install(chartWith(t, "data: {{ repeat 2000000000 \"x\" }}\n"), nil))
	requireLimit(t, err, LimitMemory, `chart "web": rendering exceeded the 1 GiB memory limit for chart templates`)
	require.NoError(t, c.Check(context.Background(), install(chartWith(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n"), nil)))
}
