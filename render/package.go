package render

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/flotilla-gitops/flotilla/internal/bytesize"
)

// A package is one rendering as an agent applies it, without the repository or any chart repository:
// the release's fields, its chart with every subchart, its values and its post-renderer's parameters.
// The same rendering always makes the same bytes (JSON sorts map keys; the gzip header has no name and
// no time), so every worker of an installation stores it under the same digest.

// packageVersion is the version of the package envelope.
const packageVersion = 1

// MaxPackageSize bounds a package once decompressed: far above any real chart, and a package is data
// from another process.
const MaxPackageSize = 256 << 20

type packageEnvelope struct {
	V int `json:"v"`
	releaseFields
	Chart  *packagedChart `json:"chart,omitempty"`
	Values map[string]any `json:"values,omitempty"`
	Post   *packagedPost  `json:"postRenderer,omitempty"`
}

// packagedPost is what postRenderer runs with.
type packagedPost struct {
	Extra          []byte            `json:"extra,omitempty"`
	ForceNamespace string            `json:"forceNamespace,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	KeepCRDs       bool              `json:"keepCRDs,omitempty"`
}

// MarshalPackage encodes the release for an agent to apply. Package a release as ForCluster returns it:
// Helm changes a chart as it renders it (it drops disabled subcharts), and a release merged with
// valuesFrom holds values read on the cluster, which must not leave it.
func (rel *Release) MarshalPackage() ([]byte, error) {
	fail := func(err error) ([]byte, error) { return nil, fmt.Errorf("bundle %q: package: %w", rel.Bundle, err) }
	if len(rel.secretStrings) > 0 {
		return fail(errors.New("the release holds values from the cluster's Secrets (valuesFrom), which never leave the cluster"))
	}
	env := packageEnvelope{V: packageVersion, releaseFields: fieldsOf(rel), Chart: packChart(rel.Chart), Values: rel.Values}
	if rel.PostRenderer != nil {
		p, ok := rel.PostRenderer.(*postRenderer)
		if !ok {
			return fail(fmt.Errorf("post-renderer %T cannot be packaged", rel.PostRenderer))
		}
		if p.kustomize != nil {
			// It reads the kustomization's files from the repository checkout when Helm renders the chart,
			// which an agent does not have.
			return fail(fmt.Errorf("kustomize.dir %q over a chart is not supported on agent-mode clusters yet", p.kustomize.dir))
		}
		env.Post = &packagedPost{Extra: p.extra, ForceNamespace: p.forceNamespace, Labels: p.labels, KeepCRDs: p.keepCRDs}
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return fail(err)
	}
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(env); err != nil {
		return fail(err)
	}
	if err := zw.Close(); err != nil {
		return fail(err)
	}
	return buf.Bytes(), nil
}

// UnmarshalPackage decodes a package that MarshalPackage wrote. The release renders exactly what the
// packaged one did; WithValuesFrom and Redact work on it as on a fresh rendering.
func UnmarshalPackage(data []byte) (*Release, error) { return unmarshalPackage(data, MaxPackageSize) }

func unmarshalPackage(data []byte, limit int64) (*Release, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("package: %w", err)
	}
	plain, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("package: %w", err)
	}
	if int64(len(plain)) > limit {
		return nil, fmt.Errorf("package: over the %s limit once decompressed", bytesize.Format(limit))
	}
	var env packageEnvelope
	if err := json.Unmarshal(plain, &env); err != nil {
		return nil, fmt.Errorf("package: %w", err)
	}
	if env.V != packageVersion {
		return nil, fmt.Errorf("bundle %q: package version %d is not known here (version %d is): "+
			"the management worker and the agent run different Flotilla versions", env.Bundle, env.V, packageVersion)
	}
	rel := env.release()
	if rel.Chart, err = env.Chart.chart(0); err != nil {
		return nil, fmt.Errorf("bundle %q: package: %w", env.Bundle, err)
	}
	if rel.Deploy && rel.Chart == nil {
		// A deployed rendering always has a chart, if only the empty one raw manifests go with.
		return nil, fmt.Errorf("bundle %q: package: no chart to deploy", env.Bundle)
	}
	rel.Values = env.Values
	if p := env.Post; p != nil {
		rel.PostRenderer = &postRenderer{extra: p.Extra, forceNamespace: p.ForceNamespace, labels: p.Labels, keepCRDs: p.KeepCRDs}
	}
	return rel, nil
}
