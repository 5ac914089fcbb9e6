// Package charts resolves and fetches the charts a fleet.yaml names outside the repository: an archive
// at an https:// URL, a chart of a Helm repository (its index.yaml), a chart in an OCI registry, and the
// Chart.yaml dependencies of any chart. Resolve pins a source to an archive digest once per poll; Load
// gives every cluster's render that exact archive from a disk cache shared by the worker.
package charts

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// Source is a fleet.yaml chart source as written: helm.repo, helm.chart and helm.version.
type Source struct{ Repo, Chart, Version string }

// SourceOf is the chart source of helm options (the zero Source for nil).
func SourceOf(h *fleet.HelmOptions) Source {
	if h == nil {
		return Source{}
	}
	return Source{Repo: h.Repo, Chart: h.Chart, Version: h.Version}
}

// Remote reports whether the chart comes from outside the repository: helm.repo is set, or helm.chart is
// a URL. A chart that is a folder of the repository is not remote.
func (s Source) Remote() bool {
	return s.Repo != "" || strings.Contains(s.Chart, "://")
}

// Key identifies the source in a ChartLock (ChartLock.Source): repo, chart and version as written, with
// any user info, query or fragment of a URL cut, so the key never carries credentials.
func (s Source) Key() string {
	return fmt.Sprintf("repo=%s chart=%s version=%s", redact(s.Repo), redact(s.Chart), s.Version)
}

// String names the source as an error message starts: the field and the URL it comes from.
func (s Source) String() string {
	if s.Repo != "" {
		if schemeOf(s.Repo) == "oci" && s.Chart != "" && path.Base(strings.TrimSuffix(s.Repo, "/")) != s.Chart {
			// The chart's name is part of the reference the registry is asked about.
			return "helm.repo " + redact(s.Repo) + ", helm.chart " + s.Chart
		}
		return "helm.repo " + redact(s.Repo)
	}
	return "helm.chart " + redact(s.Chart)
}

type kind int

const (
	kindArchive kind = iota + 1 // helm.chart: https://host/path/web-1.2.0.tgz
	kindIndex                   // helm.repo: https://host/charts, helm.chart: web
	kindOCI                     // oci://registry/path/web
)

// target is where a source's archive is looked up.
type target struct {
	kind kind
	// url is the archive's URL (kindArchive), the repository's (kindIndex), or the OCI repository of the
	// chart as registry/path/name, without scheme or tag (kindOCI).
	url   string
	chart string
}

// target classifies the source. Fleet accepts an OCI chart as helm.repo (the whole reference, or the
// registry path with helm.chart naming the chart, as Helm's dependencies do) and, deprecated, as
// helm.chart.
func (s Source) target() (target, error) {
	repo, chart := strings.TrimSpace(s.Repo), strings.TrimSpace(s.Chart)
	switch {
	case repo != "":
		if err := checkURL(repo); err != nil && isSupported(repo) {
			return target{}, err
		}
		switch schemeOf(repo) {
		case "oci":
			ref := strings.TrimSuffix(strings.TrimPrefix(repo, "oci://"), "/")
			if chart != "" && path.Base(ref) != chart {
				if strings.Contains(chart, "/") || strings.Contains(chart, ":") {
					return target{}, fmt.Errorf("helm.chart %q: with an oci:// helm.repo it is the chart's name", chart)
				}
				ref += "/" + chart
			}
			return target{kind: kindOCI, url: ref, chart: path.Base(ref)}, nil
		case "https", "http":
			if chart == "" {
				return target{}, fmt.Errorf("helm.chart is required with helm.repo: it names the chart in the repository")
			}
			if strings.Contains(chart, "/") {
				return target{}, fmt.Errorf("helm.chart %q: with an https:// helm.repo it is the chart's name in index.yaml", chart)
			}
			return target{kind: kindIndex, url: strings.TrimSuffix(repo, "/"), chart: chart}, nil
		default:
			return target{}, fmt.Errorf("only https://, http:// and oci:// repositories are supported")
		}
	case strings.Contains(chart, "://"):
		if err := checkURL(chart); err != nil && isSupported(chart) {
			return target{}, err
		}
		switch schemeOf(chart) {
		case "oci":
			ref := strings.TrimSuffix(strings.TrimPrefix(chart, "oci://"), "/")
			return target{kind: kindOCI, url: ref, chart: path.Base(ref)}, nil
		case "https", "http":
			return target{kind: kindArchive, url: chart, chart: path.Base(chart)}, nil
		default:
			return target{}, fmt.Errorf("only https://, http:// and oci:// chart URLs are supported")
		}
	default:
		return target{}, fmt.Errorf("the chart is a folder of the repository, not a remote source")
	}
}

func isSupported(u string) bool {
	switch schemeOf(u) {
	case "https", "http", "oci":
		return true
	}
	return false
}

func schemeOf(u string) string {
	scheme, _, _ := strings.Cut(u, "://")
	return strings.ToLower(scheme)
}

// checkURL refuses what would put a secret into a plan: user info, a query or a fragment. Credentials
// come from the worker's credentials store (helmSecretName), never from fleet.yaml.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL")
	}
	if u.User != nil {
		return fmt.Errorf("a URL may not carry credentials: name them with the GitRepo's helmSecretName")
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(raw, "?#") {
		return fmt.Errorf("a URL with a query or a fragment is not supported (it would be recorded in the plan)")
	}
	if u.Host == "" {
		return fmt.Errorf("the URL has no host")
	}
	return nil
}
