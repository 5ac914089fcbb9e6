package chartcheck

import (
	"fmt"
	"time"

	"github.com/flotilla-gitops/flotilla/internal/bytesize"
)

// The bounds a chart's templates are rendered within. A chart of a few hundred objects renders in well
// under a second and under 100 MiB, so a real chart never comes near them; a bomb reaches one of them in
// seconds and is refused before Helm renders it inside the worker.
const (
	// MemoryLimit is the child's data segment (RLIMIT_DATA: Go's heap and goroutine stacks). The address
	// space (RLIMIT_AS) is no bound for a Go program: the runtime reserves over 1 GiB of it at start.
	MemoryLimit int64 = 1 << 30
	// CPULimit is the child's CPU time (RLIMIT_CPU, whole seconds); at it the kernel kills the child.
	CPULimit = 30 * time.Second
	// TimeLimit is wall-clock time, enforced by the parent: twice CPULimit, so a render that shares a busy
	// machine still meets the CPU limit first, while a child stuck on a lookup is not waited for forever.
	TimeLimit = 2 * CPULimit
	// OutputLimit is how much of the child's answer (the rendered manifests) the parent reads. Helm stores
	// a release in a Secret of at most 1 MiB, compressed, so no release that can be installed comes close.
	OutputLimit int64 = 16 << 20
	// MaxConcurrent is how many checks run at once per worker: each child may take MemoryLimit and a core.
	MaxConcurrent = 2
	// cacheSize bounds the charts remembered as checked (a few dozen bytes each).
	cacheSize = 4096
	// stderrKept is how much of the child's stderr the parent keeps to classify a crash: Go prints the
	// cause first, then goroutine stacks.
	stderrKept = 64 << 10
)

// Limits are the bounds of one check. Only tests change them: the worker uses the constants above.
type Limits struct {
	Memory int64
	CPU    time.Duration
	Time   time.Duration
	Output int64
}

// DefaultLimits are the constants above.
func DefaultLimits() Limits {
	return Limits{Memory: MemoryLimit, CPU: CPULimit, Time: TimeLimit, Output: OutputLimit}
}

// Limit names which bound a render went past.
type Limit int

const (
	LimitMemory Limit = iota + 1
	LimitCPU
	LimitTime
	LimitOutput
)

// LimitError is a chart whose templates went past a limit while rendering. It does not heal by retrying
// the same chart and values: the apply is refused.
type LimitError struct {
	Chart string
	Limit Limit
	// Bound is the limit's value in Limits (bytes or a duration).
	Bound string
}

func (e *LimitError) Error() string {
	what := map[Limit]string{LimitMemory: "memory limit", LimitCPU: "CPU time limit", LimitTime: "time limit",
		LimitOutput: "limit on rendered output"}[e.Limit]
	return fmt.Sprintf("chart %q: rendering exceeded the %s %s for chart templates", e.Chart, e.Bound, what)
}

// deterministic reports whether the same chart, values and cluster would go past the limit again. A
// wall-clock timeout depends on how busy the machine was, so it is checked again next time.
func (e *LimitError) deterministic() bool { return e.Limit != LimitTime }

func (l Limits) limitError(chart string, which Limit) *LimitError {
	bound := ""
	switch which {
	case LimitMemory:
		bound = bytesize.Format(l.Memory)
	case LimitOutput:
		bound = bytesize.Format(l.Output)
	case LimitCPU:
		bound = l.CPU.String()
	case LimitTime:
		bound = l.Time.String()
	}
	return &LimitError{Chart: chart, Limit: which, Bound: bound}
}
