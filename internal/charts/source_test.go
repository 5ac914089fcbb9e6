package charts

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
)

func TestSourceRemote(t *testing.T) {
	for _, c := range []struct {
		s      Source
		remote bool
	}{
		{Source{Chart: "./chart"}, false},
		{Source{Chart: "charts/web"}, false},
		{Source{}, false},
		{Source{Repo: "https://h/charts", Chart: "web"}, true},
		{Source{Chart: "https://h/web-1.0.0.tgz"}, true},
		{Source{Chart: "http://h/web-1.0.0.tgz"}, true},
		{Source{Chart: "oci://h/charts/web"}, true},
		{Source{Repo: "oci://h/charts/web"}, true},
		{Source{Chart: "git::https://h/repo"}, true},
	} {
		assert.Equal(t, c.remote, c.s.Remote(), "%+v", c.s)
	}
	assert.Equal(t, Source{}, SourceOf(nil))
	assert.Equal(t, Source{Repo: "r", Chart: "c", Version: "v"}, SourceOf(&fleet.HelmOptions{Repo: "r", Chart: "c", Version: "v", ReleaseName: "x"}))
}

func TestSourceKeyIsStableAndHasNoCredentials(t *testing.T) {
	s := Source{Repo: "https://user:pw@h/charts?token=abc", Chart: "web", Version: "^1"}
	assert.Equal(t, s.Key(), s.Key())
	assert.Equal(t, "repo=https://h/charts chart=web version=^1", s.Key())
	assert.NotEqual(t, s.Key(), Source{Repo: "https://h/charts", Chart: "web", Version: "^2"}.Key())
	assert.NotEqual(t, Source{Chart: "a"}.Key(), Source{Repo: "a"}.Key())
}

func TestSourceTargets(t *testing.T) {
	for _, c := range []struct {
		s    Source
		want target
	}{
		{Source{Repo: "https://h/charts/", Chart: "web"}, target{kind: kindIndex, url: "https://h/charts", chart: "web"}},
		{Source{Chart: "https://h/x/web-1.0.0.tgz"}, target{kind: kindArchive, url: "https://h/x/web-1.0.0.tgz", chart: "web-1.0.0.tgz"}},
		// Fleet's forms of an OCI chart: the whole reference in helm.repo or (deprecated) helm.chart, or
		// the registry path in helm.repo and the chart's name in helm.chart.
		{Source{Repo: "oci://h:5000/charts/web"}, target{kind: kindOCI, url: "h:5000/charts/web", chart: "web"}},
		{Source{Repo: "oci://h:5000/charts/web", Chart: "web"}, target{kind: kindOCI, url: "h:5000/charts/web", chart: "web"}},
		{Source{Repo: "oci://h:5000/charts", Chart: "web"}, target{kind: kindOCI, url: "h:5000/charts/web", chart: "web"}},
		{Source{Chart: "oci://h:5000/charts/web"}, target{kind: kindOCI, url: "h:5000/charts/web", chart: "web"}},
	} {
		got, err := c.s.target()
		require.NoError(t, err, "%+v", c.s)
		assert.Equal(t, c.want, got, "%+v", c.s)
	}
	for _, c := range []struct {
		s   Source
		err string
	}{
		{Source{Repo: "https://user:pw@h/charts", Chart: "web"}, "may not carry credentials"},
		{Source{Repo: "https://h/charts?token=x", Chart: "web"}, "query"},
		{Source{Repo: "https://h/charts"}, "helm.chart is required"},
		{Source{Repo: "ssh://h/charts", Chart: "web"}, "only https://, http:// and oci:// repositories"},
		{Source{Chart: "git::https://h/repo"}, "only https://, http:// and oci:// chart URLs"},
		{Source{Chart: "s3://bucket/web.tgz"}, "only https://, http:// and oci:// chart URLs"},
	} {
		_, err := c.s.target()
		require.Error(t, err, "%+v", c.s)
		assert.Contains(t, err.Error(), c.err)
		assert.NotContains(t, err.Error(), "pw")
	}
}

func TestPickVersion(t *testing.T) {
	published := []string{"1.0.0", "1.2.0", "1.2.1", "1.3.0-rc.1", "2.0.0", "0.3.4", "0.3.9", "not-semver"}
	for want, expect := range map[string]string{
		"":           "2.0.0",
		"^1.2":       "1.2.1",
		"~0.3.0":     "0.3.9",
		">=1.0 <2":   "1.2.1",
		"1.0.0":      "1.0.0",
		"1.3.0-rc.1": "1.3.0-rc.1",
		">=1.3.0-0":  "2.0.0",
		"1.x":        "1.2.1",
		"not-semver": "not-semver",
	} {
		got, err := pickVersion(published, want)
		require.NoError(t, err, want)
		assert.Equal(t, expect, got, want)
	}
	_, err := pickVersion(published, "^3")
	require.Error(t, err)
	assert.Equal(t, `no version matches "^3" (available: 2.0.0, 1.3.0-rc.1, 1.2.1, 1.2.0, 1.0.0, and 2 more)`, err.Error())

	_, err = pickVersion([]string{"1.0.0-beta.1"}, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no stable version is published (available: 1.0.0-beta.1)")

	_, err = pickVersion(published, "not a constraint!")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `version "not a constraint!" is neither a version nor a semver constraint`)
}
