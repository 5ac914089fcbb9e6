package metrics

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
)

var metricName = regexp.MustCompile(`\b(?:flotilla|temporal)_[a-z0-9_]+`)

// DashboardMetrics are the metric families a Grafana dashboard's queries name (a histogram's _bucket,
// _count and _sum are its family), so tests can hold docs/grafana/flotilla.json to what the code serves.
func DashboardMetrics(dashboard []byte) ([]string, error) {
	var d struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(dashboard, &d); err != nil {
		return nil, err
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			exprs = append(exprs, t.Expr)
		}
	}
	for _, v := range d.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	seen := map[string]bool{}
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if strings.HasSuffix(n, "_seconds"+suffix) {
					n = strings.TrimSuffix(n, suffix)
				}
			}
			seen[n] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}
