package proc

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAwaitReadyReturnsOnceReadyAndSaysWhenTheProcessDiedInstead(t *testing.T) {
	dir := t.TempDir()
	sleeper, err := Start(Spec{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", "sleep 60"}, LogFile: filepath.Join(dir, "sleeper.log")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sleeper.Kill() })
	calls := 0
	died, err := sleeper.AwaitReady(context.Background(), time.Minute, time.Millisecond, func(context.Context) error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	require.NoError(t, err)
	require.False(t, died)
	require.Equal(t, 3, calls)

	crasher, err := Start(Spec{Name: "crasher", Path: "/bin/sh", Args: []string{"-c", "echo no config file; exit 1"}, LogFile: filepath.Join(dir, "crasher.log")})
	require.NoError(t, err)
	died, err = crasher.AwaitReady(context.Background(), time.Minute, time.Millisecond, func(context.Context) error { return errors.New("connection refused") })
	require.True(t, died)
	require.ErrorContains(t, err, "crasher exited while starting (connection refused):")
	require.ErrorContains(t, err, "no config file")

	// One that never becomes ready is killed when the limit passes.
	stuck, err := Start(Spec{Name: "stuck", Path: "/bin/sh", Args: []string{"-c", "sleep 60"}, LogFile: filepath.Join(dir, "stuck.log")})
	require.NoError(t, err)
	died, err = stuck.AwaitReady(context.Background(), 50*time.Millisecond, time.Millisecond, func(context.Context) error { return errors.New("503") })
	require.False(t, died)
	require.ErrorContains(t, err, "stuck not ready after 50ms (503)")
	require.False(t, stuck.Alive())
}
