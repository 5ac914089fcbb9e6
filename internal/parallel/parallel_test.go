package parallel

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestForEachRunsEveryCallWithinTheLimitAndReturnsAnError(t *testing.T) {
	var running, peak, calls atomic.Int32
	err := ForEach(20, 3, func(i int) error {
		calls.Add(1)
		now := running.Add(1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		defer running.Add(-1)
		if i == 7 {
			return errors.New("bundle 7 failed")
		}
		return nil
	})
	require.EqualError(t, err, "bundle 7 failed")
	require.EqualValues(t, 20, calls.Load(), "a failure does not stop the other calls")
	require.LessOrEqual(t, peak.Load(), int32(3))
}
