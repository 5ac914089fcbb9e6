package harness

import (
	"os"
	"strconv"
	"time"
)

// Patience is how long a scenario waits for something it states it needs d for. The times the scenarios
// state are what an idle 2-core machine needs, with room; a CI machine shared with other work has run the
// whole stack three to five times slower (API servers ready in 50 s rather than 15), and a wait capped at
// the idle time then failed a scenario that was getting there. Every wait returns as soon as its condition
// holds, so patience costs a passing scenario nothing; it only delays the report of a real failure.
// FLOTILLA_TEST_PATIENCE sets the factor (default 3).
func Patience(d time.Duration) time.Duration {
	return time.Duration(float64(d) * patienceFactor)
}

var patienceFactor = func() float64 {
	if f, err := strconv.ParseFloat(os.Getenv("FLOTILLA_TEST_PATIENCE"), 64); err == nil && f >= 1 {
		return f
	}
	return 3
}()
