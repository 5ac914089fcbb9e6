package fleet

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyncWindow is Flotilla's own (Argo CD's sync windows, which Fleet users ask for): when a GitRepo's
// changes may reach its clusters. An allow window lets them through while it is active, and once a
// GitRepo has one, only while one is; an active deny window holds them, whatever allows them.
type SyncWindow struct {
	// Kind is allow or deny.
	Kind string `json:"kind"`
	// Schedule is when the window starts, a cron expression of five fields in UTC (0 22 * * 1-5).
	Schedule string `json:"schedule"`
	// Duration is how long it stays active from each start (a Go duration: 8h, 30m).
	Duration string `json:"duration"`
	// The clusters it applies to, chosen as a target chooses them; none set: every cluster.
	ClusterName          string                `json:"clusterName,omitempty"`
	ClusterSelector      *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	ClusterGroup         string                `json:"clusterGroup,omitempty"`
	ClusterGroupSelector *metav1.LabelSelector `json:"clusterGroupSelector,omitempty"`
	// CorrectDrift lets drift correction restore what is deployed while the window holds changes back.
	CorrectDrift bool `json:"correctDrift,omitempty"`
}

// Window kinds.
const (
	WindowAllow = "allow"
	WindowDeny  = "deny"
)

// AllClusters says the window names no cluster criteria, so it applies to every cluster.
func (w SyncWindow) AllClusters() bool {
	return w.ClusterName == "" && w.ClusterSelector == nil && w.ClusterGroup == "" && w.ClusterGroupSelector == nil
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func (w SyncWindow) parse() (cron.Schedule, time.Duration, error) {
	if w.Kind != WindowAllow && w.Kind != WindowDeny {
		return nil, 0, fmt.Errorf("kind %q: want allow or deny", w.Kind)
	}
	if (strings.HasPrefix(w.Schedule, "TZ=") || strings.HasPrefix(w.Schedule, "CRON_TZ=")) && !strings.Contains(w.Schedule, " ") {
		// The parser slices the zone up to the first space, and panics when there is none.
		return nil, 0, fmt.Errorf("schedule %q: a time zone must be followed by a schedule", w.Schedule)
	}
	s, err := cronParser.Parse(w.Schedule)
	if err != nil {
		return nil, 0, fmt.Errorf("schedule %q: %v", w.Schedule, err)
	}
	d, err := time.ParseDuration(w.Duration)
	if err != nil || d <= 0 {
		return nil, 0, fmt.Errorf("duration %q: not a positive duration (8h, 30m)", w.Duration)
	}
	return s, d, nil
}

// ValidateSyncWindows names the first window whose kind, schedule or duration cannot be used. It is
// deterministic, for the GitRepo workflow; the Plan activity checks the selectors
// (ValidateSyncWindowSelectors), as it does the targets'.
func ValidateSyncWindows(ws []SyncWindow) error {
	for i, w := range ws {
		if _, _, err := w.parse(); err != nil {
			return fmt.Errorf("spec.syncWindows[%d]: %w", i, err)
		}
	}
	return nil
}

// ValidateSyncWindowSelectors names the first window selector that does not parse.
func ValidateSyncWindowSelectors(ws []SyncWindow) error {
	for i, w := range ws {
		for _, f := range []struct {
			name string
			sel  *metav1.LabelSelector
		}{{"clusterSelector", w.ClusterSelector}, {"clusterGroupSelector", w.ClusterGroupSelector}} {
			if f.sel == nil {
				continue
			}
			if _, err := metav1.LabelSelectorAsSelector(f.sel); err != nil {
				return fmt.Errorf("spec.syncWindows[%d].%s: %v", i, f.name, err)
			}
		}
	}
	return nil
}

// WindowState is whether a cluster's changes may go through at a moment, under the windows that apply to it.
type WindowState struct {
	Open bool
	// Change is the next moment Open flips (zero when it never does within a year).
	Change time.Time
	// CorrectDrift says drift correction may run although the windows are closed.
	CorrectDrift bool
}

// parsedWindow is a window whose schedule and duration parsed.
type parsedWindow struct {
	deny     bool
	schedule cron.Schedule
	duration time.Duration
}

// WindowsAt decides the windows at t. Windows that do not parse count for nothing (ValidateSyncWindows
// refuses them before they are used). It is pure: the schedule is read in UTC.
func WindowsAt(ws []SyncWindow, t time.Time) WindowState {
	t = t.UTC()
	var parsed []parsedWindow
	st := WindowState{}
	for _, w := range ws {
		st.CorrectDrift = st.CorrectDrift || w.CorrectDrift
		if s, d, err := w.parse(); err == nil {
			parsed = append(parsed, parsedWindow{deny: w.Kind == WindowDeny, schedule: s, duration: d})
		}
	}
	st.Open = openAt(parsed, t)
	// Openness only changes where a window starts or ends: step through those, at most a year ahead.
	at := t
	for i := 0; i < 1000; i++ {
		next := nextEdge(parsed, at)
		if next.IsZero() || next.Sub(t) > 366*24*time.Hour {
			break
		}
		if openAt(parsed, next) != st.Open {
			st.Change = next
			break
		}
		at = next
	}
	return st
}

func openAt(ws []parsedWindow, t time.Time) bool {
	anyAllow, allowed := false, false
	for _, w := range ws {
		// It started in (t-duration, t]. Next is zero for a schedule that never comes (February 30th),
		// which is no start.
		start := w.schedule.Next(t.Add(-w.duration))
		active := !start.IsZero() && !start.After(t)
		switch {
		case w.deny && active:
			return false
		case !w.deny:
			anyAllow = true
			allowed = allowed || active
		}
	}
	return !anyAllow || allowed
}

// nextEdge is the first moment after t a window starts or ends.
func nextEdge(ws []parsedWindow, t time.Time) time.Time {
	var next time.Time
	consider := func(c time.Time) {
		if c.After(t) && (next.IsZero() || c.Before(next)) {
			next = c
		}
	}
	for _, w := range ws {
		consider(w.schedule.Next(t))
		if start := w.schedule.Next(t.Add(-w.duration)); !start.IsZero() && !start.After(t) {
			consider(start.Add(w.duration))
		}
	}
	return next
}
