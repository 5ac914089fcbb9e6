package tmpl

import (
	"fmt"
	"testing"
)

// A template that calls functions a thousand times: where checking each call costs most.
func BenchmarkLoopRender(b *testing.B) {
	hosts := make([]any, 500)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("host-%d.example.com", i)
	}
	c := normalCluster
	c.TemplateValues = map[string]any{"hosts": hosts}
	text := "hosts:\n${- range $i, $h := .ClusterValues.hosts }\n  - name: ${ $h | upper | quote }\n    short: ${ trunc 6 $h }\n${- end }\n"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RenderText("values.yaml", text, c); err != nil {
			b.Fatal(err)
		}
	}
}
