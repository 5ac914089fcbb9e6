package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat; 100 on every Linux we run on.
const clockTicks = 100

// cpuSeconds is the user+system CPU time a live process has used so far, 0 when it is gone.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after its closing parenthesis are fixed.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// After ')' come state (field 3) … utime is field 14 and stime field 15, i.e. indexes 11 and 12 here.
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// memoryMB reads VmHWM (peak resident set) and VmRSS of a live process, in MiB.
func memoryMB(pid int) (peak, current float64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmHWM:":
			peak = kb / 1024
		case "VmRSS:":
			current = kb / 1024
		}
	}
	return peak, current
}

// promSum adds up every sample of one Prometheus counter whose labels pass keep.
func promSum(r io.Reader, metric string, keep func(labels string) bool) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	var sum float64
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric) {
			continue
		}
		rest := line[len(metric):]
		labels := ""
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		case strings.HasPrefix(rest, " "):
		default:
			continue // another metric sharing the prefix
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		if keep == nil || keep(labels) {
			sum += v
		}
	}
	return sum, sc.Err()
}

// apiServerScraper reads apiserver_request_total from one kube-apiserver with its admin credentials.
type apiServerScraper struct {
	url    string
	client *http.Client
}

func newAPIServerScraper(kubeconfig string) (*apiServerScraper, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	hc.Timeout = 10 * time.Second
	return &apiServerScraper{url: strings.TrimRight(cfg.Host, "/") + "/metrics", client: hc}, nil
}

// requests counts the requests the API server served for clients. The server's requests to itself
// (its identity lease, APF and storage-version bookkeeping, all under kube-system or cluster-scoped
// flowcontrol and lease objects) are left out: they happen with or without Flotilla.
func (s *apiServerScraper) requests(ctx context.Context) (float64, error) {
	return scrape(ctx, s.client, s.url, "apiserver_request_total", func(labels string) bool {
		return !isAPIServerHousekeeping(labels)
	})
}

// scrape sums one counter of a Prometheus endpoint over the series whose labels pass keep.
func scrape(ctx context.Context, client *http.Client, url, metric string, keep func(labels string) bool) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return promSum(resp.Body, metric, keep)
}

// isAPIServerHousekeeping recognises the series a lone kube-apiserver keeps incrementing by itself.
func isAPIServerHousekeeping(labels string) bool {
	for _, r := range []string{`resource="leases"`, `group="flowcontrol.apiserver.k8s.io"`, `resource="storageversions"`,
		`resource="endpoints"`, `resource="endpointslices"`} {
		if strings.Contains(labels, r) {
			return true
		}
	}
	return false
}

// temporalActions reads the dev server's `action` counter for one namespace: Temporal's own count of
// what Temporal Cloud bills as actions (workflow starts, signals, queries, heartbeats, timers, activities,
// child starts counted twice, search-attribute upserts, activity retries).
func temporalActions(ctx context.Context, metricsURL, namespace string) (float64, error) {
	want := `namespace="` + namespace + `"`
	return scrape(ctx, http.DefaultClient, metricsURL, "action", func(labels string) bool { return strings.Contains(labels, want) })
}
