package metrics

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

func TestSDKHandlerNamesAndLabels(t *testing.T) {
	r := New()
	h := r.SDK.WithTags(map[string]string{"namespace": "default"})
	h.WithTags(map[string]string{"operation": "PollActivityTaskQueue"}).Counter("temporal_request").Inc(2)
	// The same family with another tag set: both series must gather, with the union of labels.
	h.WithTags(map[string]string{"poller_type": "activity_task"}).Counter("temporal_request").Inc(1)
	h.Gauge("temporal_worker_task_slots_available").Update(7)
	h.Timer("temporal_activity_execution_latency").Record(300 * time.Millisecond)

	families, err := r.Prom.Gather()
	require.NoError(t, err)
	got := map[string]int{}
	for _, f := range families {
		got[f.GetName()] = len(f.GetMetric())
	}
	require.Equal(t, 2, got["temporal_request_total"])
	require.Equal(t, 1, got["temporal_worker_task_slots_available"])
	require.Equal(t, 1, got["temporal_activity_execution_latency_seconds"])

	for _, f := range families {
		if f.GetName() != "temporal_request_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			// Every series carries the family's three labels, the missing one empty.
			require.Len(t, m.GetLabel(), 3)
			want := map[string]float64{"PollActivityTaskQueue": 2, "": 1}[labelOf(m, "operation")]
			require.Equal(t, want, m.GetCounter().GetValue())
		}
	}
}

func TestFlotillaMetrics(t *testing.T) {
	var none *Flotilla // activities without metrics record nothing and do not panic
	none.Apply("install", ResultOK, time.Second)
	none.Observe(time.Second)
	none.Git(GitLsRemote, time.Second, errors.New("x"))
	none.ChartFetch("oci", nil)

	r := New()
	r.Flotilla.Apply("install", ResultOK, time.Second)
	r.Flotilla.Apply("upgrade", ResultError, time.Second)
	r.Flotilla.Git(GitCheckout, time.Second, errors.New("x"))
	r.Flotilla.ChartFetch("oci", nil)
	require.Equal(t, 1.0, value(t, r.Flotilla.applies.WithLabelValues("install", ResultOK)))
	require.Equal(t, 1.0, value(t, r.Flotilla.gitErrors.WithLabelValues(GitCheckout)))
	require.Equal(t, 0.0, value(t, r.Flotilla.gitErrors.WithLabelValues(GitLsRemote)))
	require.Equal(t, 1.0, value(t, r.Flotilla.chartFetches.WithLabelValues("oci", ResultOK)))
}

func TestServe(t *testing.T) {
	r := New()
	r.Flotilla.Observe(time.Second)
	srv, err := r.Serve("127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()
	body := scrape(t, "http://"+srv.Addr+"/metrics")
	for _, name := range Names {
		if name == Clusters {
			continue // no series until the first count
		}
		require.Contains(t, body, "# TYPE "+name+" ", name)
	}
	require.Contains(t, body, ObserveDuration+"_count 1")
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A container's healthcheck asks /healthz: not ready while the process still dials Temporal, ready
// once it polls.
func TestHealthzIsReadyOnlyOncePolling(t *testing.T) {
	r := New()
	srv, err := r.Serve("127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()
	status := func() int {
		resp, err := http.Get("http://" + srv.Addr + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusServiceUnavailable, status())
	r.MarkPolling()
	require.Equal(t, http.StatusOK, status())
}
