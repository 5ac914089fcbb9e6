package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/flotilla-gitops/flotilla/api"
)

// AppliedReport is one Apply of a cluster workflow and the status report that followed it.
type AppliedReport struct {
	// Actions are what the Apply was asked to do.
	Actions []api.BundleAction
	// ObservedBetween counts the observations (local activity markers) the workflow made between the
	// Apply's completion and the report: none when it reported what the Apply observed.
	ObservedBetween int
	Report          api.ClusterReport
}

// AppliesAndReports lists, in order, every Apply of a cluster workflow's current run that was followed by
// a status report, with that report.
func (s *Stack) AppliesAndReports(workflowID string) []AppliedReport {
	s.t.Helper()
	out, err := s.appliesAndReports(workflowID)
	require.NoError(s.t, err)
	return out
}

func (s *Stack) appliesAndReports(workflowID string) ([]AppliedReport, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Patience(30*time.Second))
	defer cancel()
	var out []AppliedReport
	var current *AppliedReport
	applyEvent, completed := int64(0), false
	it := s.Client.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == api.ActivityApply {
			var in api.ApplyInput
			if err := s.dc.FromPayloads(a.GetInput(), &in); err != nil {
				return nil, fmt.Errorf("%s: event %d: Apply input: %w", workflowID, ev.GetEventId(), err)
			}
			current, applyEvent, completed = &AppliedReport{Actions: in.Actions}, ev.GetEventId(), false
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && current != nil && a.GetScheduledEventId() == applyEvent {
			completed = true
		}
		if ev.GetMarkerRecordedEventAttributes() != nil && completed {
			current.ObservedBetween++
		}
		if a := ev.GetSignalExternalWorkflowExecutionInitiatedEventAttributes(); a != nil && completed && a.GetSignalName() == api.SignalClusterReport {
			if err := s.dc.FromPayloads(a.GetInput(), &current.Report); err != nil {
				return nil, fmt.Errorf("%s: event %d: report: %w", workflowID, ev.GetEventId(), err)
			}
			out = append(out, *current)
			current, completed = nil, false
		}
	}
	return out, nil
}
