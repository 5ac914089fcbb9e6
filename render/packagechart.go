package render

import (
	"errors"
	"fmt"
	"sort"

	"helm.sh/helm/v3/pkg/chart"
)

// maxChartDepth bounds subchart nesting on decode: real charts nest a few levels, a package is data.
const maxChartDepth = 32

// packagedChart is a chart with its subcharts, which chart.Chart keeps unexported (and its Raw files,
// which it keeps out of JSON). helm's chart.File is only a name and bytes in this Helm version: no
// modification time can make two packages of the same chart differ.
type packagedChart struct {
	Metadata     *chart.Metadata `json:"metadata,omitempty"`
	Lock         *chart.Lock     `json:"lock,omitempty"`
	Raw          []*chart.File   `json:"raw,omitempty"`
	Templates    []*chart.File   `json:"templates,omitempty"`
	Values       map[string]any  `json:"values,omitempty"`
	Schema       []byte          `json:"schema,omitempty"`
	Files        []*chart.File   `json:"files,omitempty"`
	Dependencies []packagedChart `json:"dependencies,omitempty"`
}

func packChart(c *chart.Chart) *packagedChart {
	if c == nil {
		return nil
	}
	p := &packagedChart{Metadata: c.Metadata, Lock: c.Lock, Raw: c.Raw, Templates: c.Templates, Values: c.Values,
		Schema: c.Schema, Files: c.Files}
	for _, d := range c.Dependencies() {
		p.Dependencies = append(p.Dependencies, *packChart(d))
	}
	// Helm's loader gathers subcharts in no fixed order; the same chart must make the same package on every
	// worker, and Helm orders what it renders by itself, not by subchart order.
	sort.SliceStable(p.Dependencies, func(i, j int) bool {
		a, b := p.Dependencies[i].Metadata, p.Dependencies[j].Metadata
		if a == nil || b == nil {
			return b != nil
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Version < b.Version
	})
	return p
}

func (p *packagedChart) chart(depth int) (*chart.Chart, error) {
	if p == nil {
		return nil, nil
	}
	if depth > maxChartDepth {
		return nil, fmt.Errorf("chart: subcharts nested more than %d deep", maxChartDepth)
	}
	if p.Metadata == nil {
		// Helm's loader never makes such a chart, and Helm's install dereferences it.
		return nil, errors.New("chart: a chart or subchart without metadata (Chart.yaml)")
	}
	c := &chart.Chart{Metadata: p.Metadata, Lock: p.Lock, Raw: p.Raw, Templates: p.Templates, Values: p.Values,
		Schema: p.Schema, Files: p.Files}
	for i := range p.Dependencies {
		d, err := p.Dependencies[i].chart(depth + 1)
		if err != nil {
			return nil, err
		}
		c.AddDependency(d)
	}
	return c, nil
}
