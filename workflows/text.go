package workflows

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// errorMessage unwraps Temporal's activity error layers to the message that names the cause.
func errorMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return "timed out: " + timeoutErr.Error()
	}
	return err.Error()
}

// hashOf identifies plain data. encoding/json is deterministic here: struct fields keep their order and
// map keys are sorted; workflowcheck cannot see that through reflection.
//
//workflowcheck:ignore
func hashOf(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%x", sum[:12])
}
