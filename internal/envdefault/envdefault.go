// Package envdefault gives a command-line flag its default from the environment, so the worker, the CLI
// and the development tools read a variable the same way: set and not empty wins, anything else is the
// built-in default. The flag, given, still wins over both.
package envdefault

import (
	"fmt"
	"os"
	"strconv"

	"github.com/flotilla-gitops/flotilla/api"
)

// Or is the value of the environment variable key when it is set and not empty, fallback otherwise.
func Or(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// TemporalAddress is the default of --address in the worker and the CLI: TEMPORAL_ADDRESS, which the
// Temporal CLI reads too, or the local dev server's frontend.
func TemporalAddress() string { return Or("TEMPORAL_ADDRESS", "127.0.0.1:7233") }

// TemporalNamespace is the default of --namespace in the worker and the CLI: TEMPORAL_NAMESPACE, which
// the Temporal CLI reads too, or Temporal's "default".
func TemporalNamespace() string { return Or("TEMPORAL_NAMESPACE", "default") }

// TaskQueue is the default of --task-queue in every binary: FLOTILLA_TASK_QUEUE, or api.DefaultTaskQueue.
// The worker, the CLI and the webhook of one installation must agree on it, so all read the same variable.
func TaskQueue() string { return Or("FLOTILLA_TASK_QUEUE", api.DefaultTaskQueue) }

// Int and Float are a numeric flag's default from the environment; CheckNumbers refuses a value that
// does not parse, which these would otherwise replace by the fallback without a word.
func Int(key string, fallback int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return v
	}
	return fallback
}

// Float: see Int.
func Float(key string, fallback float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(key), 64); err == nil {
		return v
	}
	return fallback
}

// Bool is a boolean flag's default from the environment (1, true, 0, false, as strconv.ParseBool reads
// them); CheckBools refuses a value that does not parse.
func Bool(key string) bool {
	v, err := strconv.ParseBool(os.Getenv(key))
	return err == nil && v
}

// CheckBools returns an error naming the first of keys that is set but is not a boolean.
func CheckBools(keys ...string) error {
	for _, key := range keys {
		if v := os.Getenv(key); v != "" {
			if _, err := strconv.ParseBool(v); err != nil {
				return fmt.Errorf("%s=%q: not a boolean (1, true, 0 or false)", key, v)
			}
		}
	}
	return nil
}

// CheckNumbers returns an error naming the first of ints or floats that is set but does not parse.
func CheckNumbers(ints, floats []string) error {
	for _, key := range ints {
		if v := os.Getenv(key); v != "" {
			if _, err := strconv.Atoi(v); err != nil {
				return fmt.Errorf("%s=%q: not a whole number", key, v)
			}
		}
	}
	for _, key := range floats {
		if v := os.Getenv(key); v != "" {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				return fmt.Errorf("%s=%q: not a number", key, v)
			}
		}
	}
	return nil
}
