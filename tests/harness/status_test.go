package harness

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
)

// A status request that ran out of time or found the server busy is asked again; an answer, such as a
// GitRepo that does not run, is not.
func TestOnlyARequestThatFoundNoAnswerIsAskedAgain(t *testing.T) {
	for _, err := range []error{
		context.DeadlineExceeded,
		fmt.Errorf("querying: %w", context.DeadlineExceeded),
		serviceerror.NewDeadlineExceeded("context deadline exceeded"),
		serviceerror.NewUnavailable("connection refused"),
		serviceerror.NewResourceExhausted(0, "busy"),
	} {
		require.True(t, transient(err), "%v", err)
	}
	for _, err := range []error{
		serviceerror.NewNotFound("workflow not found"),
		serviceerror.NewNamespaceNotFound("scenario-01"),
		serviceerror.NewQueryFailed("unknown queryType"),
	} {
		require.False(t, transient(err), "%v", err)
	}
}
