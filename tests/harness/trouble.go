package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// workflowTrouble says what a workflow that did not get where a test waited for is doing: its pending
// workflow task and activities, and the workflow task failures and timeouts in its history. A wait that
// runs out prints it beside the last status, so that a failure on a loaded CI machine tells a slow
// machine from a workflow task failing over and over.
func (s *Stack) workflowTrouble(id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	d, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return fmt.Sprintf("describing workflow %s: %v", id, err)
	}
	info := d.GetWorkflowExecutionInfo()
	fmt.Fprintf(&b, "workflow %s run %s: %s, %d history events\n", id, info.GetExecution().GetRunId(), info.GetStatus(), info.GetHistoryLength())
	if wt := d.GetPendingWorkflowTask(); wt != nil {
		fmt.Fprintf(&b, "  pending workflow task: %s, attempt %d, scheduled %s ago\n", wt.GetState(), wt.GetAttempt(),
			time.Since(wt.GetOriginalScheduledTime().AsTime()).Round(time.Second))
	}
	for _, a := range d.GetPendingActivities() {
		fmt.Fprintf(&b, "  pending activity %s: %s, attempt %d", a.GetActivityType().GetName(), a.GetState(), a.GetAttempt())
		if f := a.GetLastFailure(); f != nil {
			fmt.Fprintf(&b, ", last failure: %s", f.GetMessage())
		}
		b.WriteString("\n")
	}
	failed, timedOut := 0, 0
	var last string
	it := s.Client.GetWorkflowHistory(ctx, id, info.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			fmt.Fprintf(&b, "  reading the history: %v\n", err)
			break
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			failed++
			a := e.GetWorkflowTaskFailedEventAttributes()
			last = fmt.Sprintf("event %d at %s: workflow task failed (%s): %s", e.GetEventId(),
				e.GetEventTime().AsTime().Format(time.RFC3339), a.GetCause(), a.GetFailure().GetMessage())
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
			timedOut++
			last = fmt.Sprintf("event %d at %s: workflow task timed out (%s)", e.GetEventId(),
				e.GetEventTime().AsTime().Format(time.RFC3339), e.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType())
		}
	}
	fmt.Fprintf(&b, "  workflow tasks failed %d, timed out %d", failed, timedOut)
	if last != "" {
		fmt.Fprintf(&b, "; the last: %s", last)
	}
	return b.String()
}
