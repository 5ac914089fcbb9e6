package metrics

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

// SDKHandler is the Temporal SDK's client.MetricsHandler on client_golang, so the worker's metrics
// (task latencies, slots, pollers, requests) need no tally and no contrib module. Counters get `_total`,
// timers become histograms in seconds with `_seconds`, as Prometheus names them; tags become labels.
//
// The SDK tags one metric differently at different call sites (a request's operation, a poller's type),
// and Prometheus wants one label set per family, so the handler keeps each family's series as they come
// and, at each scrape, gives every series the union of the family's labels, empty where it has none: an
// empty label is no label to Prometheus. Tags are the SDK's own (namespace, task queue, workflow and
// activity types, operation, poller and worker types, failure reason), bounded by the code, not the load.
type SDKHandler struct {
	tags map[string]string
	set  *seriesSet
}

var _ client.MetricsHandler = (*SDKHandler)(nil)

// timerBuckets span a workflow task (milliseconds) to a long activity (minutes), in seconds.
var timerBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 600}

const (
	kindCounter = iota
	kindGauge
	kindTimer
)

type seriesSet struct {
	mu       sync.Mutex
	families map[string]*family
}

type family struct {
	kind   int
	series map[string]*series
}

type series struct {
	mu     sync.Mutex
	labels map[string]string
	value  float64 // a counter's total or a gauge's last value
	count  uint64
	sum    float64
	counts []uint64 // per bucket, not cumulative
}

// NewSDKHandler is an SDKHandler with no tags; it is a prometheus.Collector to register.
func NewSDKHandler() *SDKHandler {
	return &SDKHandler{set: &seriesSet{families: map[string]*family{}}}
}

// WithTags is the SDK's way to add labels to what it records through the handler returned.
func (h *SDKHandler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	for k, v := range h.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[sanitize(k)] = v
	}
	return &SDKHandler{tags: merged, set: h.set}
}

func (h *SDKHandler) Counter(name string) client.MetricsCounter {
	s := h.set.get(promName(name, kindCounter), kindCounter, h.tags)
	return counterFunc(func(d int64) {
		s.mu.Lock()
		s.value += float64(d)
		s.mu.Unlock()
	})
}

func (h *SDKHandler) Gauge(name string) client.MetricsGauge {
	s := h.set.get(promName(name, kindGauge), kindGauge, h.tags)
	return gaugeFunc(func(v float64) {
		s.mu.Lock()
		s.value = v
		s.mu.Unlock()
	})
}

func (h *SDKHandler) Timer(name string) client.MetricsTimer {
	s := h.set.get(promName(name, kindTimer), kindTimer, h.tags)
	return timerFunc(func(d time.Duration) {
		v := d.Seconds()
		i := sort.SearchFloat64s(timerBuckets, v) // the first bucket whose bound is >= v
		s.mu.Lock()
		s.count++
		s.sum += v
		if i < len(timerBuckets) {
			s.counts[i]++
		}
		s.mu.Unlock()
	})
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

// promName is the SDK's name as Prometheus spells a metric of its kind.
func promName(name string, kind int) string {
	name = sanitize(name)
	switch kind {
	case kindCounter:
		if !strings.HasSuffix(name, "_total") {
			name += "_total"
		}
	case kindTimer:
		if !strings.HasSuffix(name, "_seconds") {
			name += "_seconds"
		}
	}
	return name
}

// sanitize keeps a name within Prometheus's [a-zA-Z_][a-zA-Z0-9_]*.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

func (ss *seriesSet) get(name string, kind int, tags map[string]string) *series {
	key := seriesKey(tags)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	f := ss.families[name]
	if f == nil {
		f = &family{kind: kind, series: map[string]*series{}}
		ss.families[name] = f
	}
	s := f.series[key]
	if s == nil {
		s = &series{labels: tags}
		if kind == kindTimer {
			s.counts = make([]uint64, len(timerBuckets))
		}
		f.series[key] = s
	}
	return s
}

func seriesKey(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(tags[k])
		b.WriteByte(0)
	}
	return b.String()
}

// Describe sends nothing: the SDK's families are known only as it records them, which makes this an
// unchecked collector.
func (h *SDKHandler) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series, each with its family's union of labels.
func (h *SDKHandler) Collect(ch chan<- prometheus.Metric) {
	h.set.mu.Lock()
	type snap struct {
		name string
		kind int
		ss   []*series
	}
	var fams []snap
	for name, f := range h.set.families {
		s := snap{name: name, kind: f.kind}
		for _, x := range f.series {
			s.ss = append(s.ss, x)
		}
		fams = append(fams, s)
	}
	h.set.mu.Unlock()
	for _, f := range fams {
		seen := map[string]bool{}
		var names []string
		for _, s := range f.ss {
			for k := range s.labels {
				if !seen[k] {
					seen[k] = true
					names = append(names, k)
				}
			}
		}
		sort.Strings(names)
		desc := prometheus.NewDesc(f.name, "Temporal Go SDK metric "+f.name+".", names, nil)
		for _, s := range f.ss {
			values := make([]string, len(names))
			for i, n := range names {
				values[i] = s.labels[n]
			}
			s.mu.Lock()
			switch f.kind {
			case kindCounter:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, s.value, values...)
			case kindGauge:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, s.value, values...)
			case kindTimer:
				buckets := make(map[float64]uint64, len(timerBuckets))
				var cum uint64
				for i, b := range timerBuckets {
					cum += s.counts[i]
					buckets[b] = cum
				}
				ch <- prometheus.MustNewConstHistogram(desc, s.count, s.sum, buckets, values...)
			}
			s.mu.Unlock()
		}
	}
}
