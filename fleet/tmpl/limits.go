package tmpl

import (
	"fmt"
	"time"
)

// A template is data from git, rendered on the worker that serves every GitRepo: whatever it says, one
// render must stay small and short. These limits hold for each template (helm.values, each valuesFiles
// entry, each templateValues key) and each cluster.
const (
	// MaxOutput is the text a template may render, and the size of every value it computes on the way
	// (a string's length; a list or map counts its elements too), so no function can build more.
	MaxOutput = 4 << 20
	// MaxDepth is how deeply values may nest: printing and copying them recurses once per level.
	MaxDepth = 100
	// MaxCode is the size of a template's `${ }` expressions: parsing takes about 90 bytes per byte of them.
	MaxCode = 128 << 10
	// MaxSteps bounds the work: each loop iteration, function call and comparison is a step, and a call
	// costs one more step per KiB it returns. It is the limit a heavy template meets, the same every time.
	MaxSteps = 100_000
	// MaxValuesFile is the size of a valuesFiles entry, checked before it is parsed: parsing 4 MiB of YAML
	// allocates several hundred MiB on the way. Real values files are kilobytes.
	MaxValuesFile = 4 << 20
	// MaxRenderTime backs MaxSteps up for steps that are slow without producing much (large comparisons).
	MaxRenderTime = time.Second
)

// renderTimeout is MaxRenderTime, turned off by tests of the step limit: on a machine starved of CPU the
// clock can run out before a loop's steps do, and those tests check the steps.
var renderTimeout = MaxRenderTime

const (
	bytesPerStep = 1 << 10
	// comparisonsPerStep prices uniq and without, which compare every element with every other.
	comparisonsPerStep = 100
	// clockEvery is how many steps go between readings of the clock, which cost as much as a small step.
	clockEvery = 16
	// maxCompared bounds eq's arguments: each comparison of two long strings reads both.
	maxCompared = 64
)

// mib names a byte limit the way errors print it.
func mib(n int) string { return fmt.Sprintf("%d MiB", n>>20) }

var (
	outputLimit = "the " + mib(MaxOutput) + " limit of a template's output"
	valueLimit  = "the " + mib(MaxOutput) + " limit of a template's values"
)

// A limitError is a template that asked for more than a render may spend, named by the function that
// would have spent it.
type limitError struct {
	fn, msg string
}

func (e *limitError) Error() string {
	if e.fn == "" {
		return e.msg
	}
	return e.fn + ": " + e.msg
}

func overLimit(fn, format string, args ...any) error {
	return &limitError{fn: fn, msg: fmt.Sprintf(format, args...)}
}

// budget is one render's account of steps and time.
type budget struct {
	steps    int
	deadline time.Time // zero: no deadline
}

func newBudget(timeout time.Duration) *budget {
	b := &budget{}
	if timeout > 0 {
		b.deadline = time.Now().Add(timeout)
	}
	return b
}

// spend charges n steps for fn and checks the clock.
func (b *budget) spend(fn string, n int) error {
	b.steps += n
	if b.steps > MaxSteps || b.steps < 0 {
		return overLimit(fn, "the template is over its limit of %d steps (loop iterations and function calls)", MaxSteps)
	}
	if !b.deadline.IsZero() && (b.steps%clockEvery < n || n >= clockEvery) && time.Now().After(b.deadline) {
		return overLimit(fn, "the template ran longer than its limit of %s", MaxRenderTime)
	}
	return nil
}

// spendBytes charges for n bytes produced or read.
func (b *budget) spendBytes(fn string, n int) error { return b.spend(fn, n/bytesPerStep) }

// cappedWriter collects a template's output up to MaxOutput bytes.
type cappedWriter struct {
	buf []byte
}

var errOutputFull = &limitError{msg: "the output is over " + outputLimit}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if len(w.buf)+len(p) > MaxOutput {
		return 0, errOutputFull
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *cappedWriter) String() string { return string(w.buf) }
