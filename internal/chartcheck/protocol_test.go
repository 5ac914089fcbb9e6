package chartcheck

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

// A subchart fetched for a Chart.yaml dependency is added to a chart after it was loaded: the child must
// still render it, so it travels with the parent's files.
func TestAChartsFetchedDependenciesTravelToTheChild(t *testing.T) {
	parent := testchart.New("app", "0.1.0", &chart.Dependency{Name: "redis", Version: "^17", Repository: "oci://example/charts"})
	files, err := chartFiles(loadBack(t, parent))
	require.NoError(t, err)
	loaded, err := childRequest{Files: files}.loadChart()
	require.NoError(t, err)
	require.Empty(t, loaded.Dependencies())

	withDep := loadBack(t, parent)
	withDep.AddDependency(loadBack(t, testchart.New("redis", "17.2.0")))
	files, err = chartFiles(withDep)
	require.NoError(t, err)
	loaded, err = childRequest{Files: files}.loadChart()
	require.NoError(t, err)
	require.Len(t, loaded.Dependencies(), 1)
	require.Equal(t, "17.2.0", loaded.Dependencies()[0].Metadata.Version)
	require.Len(t, loaded.Templates, 1, "the parent's own files are there once")
}

// loadBack is c as a chart loaded from its files (with Raw), as render loads charts.
func loadBack(t *testing.T, c *chart.Chart) *chart.Chart {
	t.Helper()
	data, err := testchart.Package(c)
	require.NoError(t, err)
	loaded, err := loaderLoadArchive(data)
	require.NoError(t, err)
	return loaded
}

func loaderLoadArchive(data []byte) (*chart.Chart, error) {
	return loader.LoadArchive(bytes.NewReader(data))
}
