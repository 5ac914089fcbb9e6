package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	helmregistry "helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

// An index.yaml is whatever a chart repository serves. Whatever it holds, parseIndex refuses it naming
// index.yaml, or keeps only valid versions within maxIndexVersions, accounts for at least the bytes it
// keeps (the memo's budget relies on it), and entry picks only a version the index lists, with a URL.
func FuzzParseIndex(f *testing.F) {
	yamlIndex := "apiVersion: v1\nentries:\n  web:\n" +
		"  - apiVersion: v2\n    name: web\n    version: 1.2.0\n    description: a web server\n    digest: " + strings.Repeat("a", 64) + "\n" +
		"    urls:\n    - https://charts.example.com/web-1.2.0.tgz\n" +
		"  - name: web\n    version: 1.3.0-rc.1\n    urls: [web-1.3.0-rc.1.tgz]\n" +
		"  - name: web\n    version: 1.1.0\n    urls: [web-1.1.0.tgz]\n    maintainers: [{name: someone}]\n" +
		"  redis:\n  - name: redis\n    version: 17.0.0+build.3\n    urls: [oci://registry.example.com/charts/redis]\n"
	jsonIndex := `{"apiVersion":"v1","generated":"2026-01-01T00:00:00Z","entries":{"web":[{"name":"web","version":"2.0.0","urls":["web-2.0.0.tgz"]},` +
		`{"name":"web","version":"not-semver","urls":["x.tgz"]},null,{"name":"web"}]}}`
	for _, seed := range []struct{ data, chart, want string }{
		{yamlIndex, "web", ""},
		{yamlIndex, "web", "~1.1"},
		{yamlIndex, "web", "1.3.0-rc.1"},
		{yamlIndex, "web", ">=2"},
		{yamlIndex, "redis", "17.0.0+build.3"},
		{yamlIndex, "nginx", ""},
		{jsonIndex, "web", ""},
		{jsonIndex, "web", "not-semver"},
		{jsonIndex, "web", "^^^"},
		{"apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: 1.0.0\n", "web", ""},
		{"apiVersion: v1\nentries:\n  web: []\n", "web", ""},
		{"entries: {}\n", "", ""},
		{"apiVersion: v1\nentries:\n  web: &a [{version: 1.0.0, urls: [u]}]\n  other: *a\n", "other", "1"},
		{"apiVersion: v1\nentries: [1, 2]\n", "", ""},
		{"apiVersion: [v1]\n", "", ""},
		{"{\"apiVersion\": \"v1\", \"entries\": {\"web\": [{\"version\": 1}]}}", "web", ""},
		{"\t- not yaml", "", ""},
		{"", "", ""},
	} {
		f.Add([]byte(seed.data), seed.chart, seed.want)
	}
	f.Fuzz(func(t *testing.T, data []byte, chartName, want string) {
		index, size, err := parseIndex(data)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "index.yaml "), "a refusal names index.yaml: %v", err)
			return
		}
		require.NotEmpty(t, index.APIVersion)
		var held int64
		count := 0
		for name, versions := range index.Entries {
			held += int64(len(name))
			allSemver := true
			for _, v := range versions {
				require.NotNil(t, v)
				require.NotNil(t, v.Metadata)
				require.NotEmpty(t, v.Version, "a version without a version is skipped")
				count++
				held += int64(len(v.Name) + len(v.Version) + len(v.Digest))
				for _, u := range v.URLs {
					held += int64(len(u))
				}
				if _, err := semver.NewVersion(v.Version); err != nil {
					allSemver = false
				}
			}
			if allSemver {
				for i := 1; i < len(versions); i++ {
					prev, next := semver.MustParse(versions[i-1].Version), semver.MustParse(versions[i].Version)
					require.False(t, prev.LessThan(next), "%s: newest first: %s before %s", name, prev, next)
				}
			}
		}
		require.LessOrEqual(t, count, maxIndexVersions)
		require.GreaterOrEqual(t, size, held, "the size accounts for every byte kept")

		cv, err := entry(index, chartName, want)
		if err != nil {
			return
		}
		versions := index.Entries[chartName]
		require.True(t, slices.Contains(versions, cv), "entry picks a version the index lists")
		require.NotEmpty(t, cv.URLs)
		w := strings.TrimSpace(want)
		if w != "" && slices.ContainsFunc(versions, func(v *repo.ChartVersion) bool { return v.Version == w }) {
			require.Equal(t, w, cv.Version, "a version written as listed wins")
		}
		if w == "" {
			sv, err := semver.NewVersion(cv.Version)
			require.NoError(t, err)
			require.Empty(t, sv.Prerelease(), "no version asked for is the newest stable one")
		}
	})
}

// tgz is a gzip-compressed tar of entries, written by hand so that seeds can hold what Helm never writes.
func tgz(t testing.TB, entries ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		body := h.Linkname // the body of a regular file, carried in Linkname to keep seeds one-liners
		if h.Typeflag == tar.TypeReg || h.Typeflag == 0 {
			h.Linkname, h.Size = "", int64(len(body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		require.NoError(t, tw.WriteHeader(&h))
		if h.Size > 0 {
			_, err := tw.Write([]byte(body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func file(name, body string) tar.Header { return tar.Header{Name: name, Linkname: body} }

// longNames is an archive of empty files whose names are long: tiny compressed, large expanded, and nothing
// Helm's own bounds, which count only the files' contents, see.
func longNames(t testing.TB, files, nameLen int) []byte {
	entries := []tar.Header{file("web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n")}
	for i := range files {
		entries = append(entries, file(fmt.Sprintf("web/%d-%s", i, strings.Repeat("a", nameLen)), ""))
	}
	return tgz(t, entries...)
}

// fuzzExpandLimit stands for maxExpandedArchive, small enough for the fuzzer to reach.
const fuzzExpandLimit = 64 << 10

// A chart archive is whatever a repository serves under a digest it chooses. Whatever it holds, expand
// refuses it ("not a chart archive", or the bound) or returns files that fit the bound: contents, names and
// count (each entry costs a 512-byte header); each within Helm's per-file bound, at relative clean paths, with
// a Chart.yaml at the top.
func FuzzExpandChartArchive(f *testing.F) {
	web, err := testchart.Package(testchart.New("web", "1.0.0"))
	require.NoError(f, err)
	parent := testchart.New("shop", "0.1.0-rc.1", &chart.Dependency{Name: "web", Version: "1.0.0"})
	parent.AddDependency(testchart.New("web", "1.0.0"))
	withSub, err := testchart.Package(parent)
	require.NoError(f, err)
	chartYAML := "apiVersion: v2\nname: web\nversion: 1.0.0\n"
	for _, seed := range [][]byte{
		web,
		withSub,
		tgz(f, file("web/Chart.yaml", chartYAML), file("web/values.yaml", "a: 1\n"), file("web/templates/cm.yaml", "kind: ConfigMap\n")),
		tgz(f, tar.Header{Name: "web/", Typeflag: tar.TypeDir, Mode: 0o755}, file("web/Chart.yaml", chartYAML)),
		tgz(f, file("Chart.yaml", chartYAML)),
		tgz(f, file("web/values.yaml", "a: 1\n")),
		tgz(f, file("web/Chart.yaml", chartYAML), file("web/../../etc/passwd", "root")),
		tgz(f, file("web/Chart.yaml", chartYAML), file("/abs/path", "x")),
		tgz(f, file("web\\Chart.yaml", chartYAML), file("web\\c:\\x", "x")),
		tgz(f, file("web/Chart.yaml", chartYAML), tar.Header{Name: "web/link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}),
		tgz(f, file("web/Chart.yaml", "\ufeff"+chartYAML)),
		tgz(f),
		longNames(f, 64, 4<<10),
		[]byte("not gzip"),
		{0x1f, 0x8b, 0x08, 0x00},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := expandWithin(data, fuzzExpandLimit)

		// What the stream would expand to, measured apart from expand.
		var expanded int64 = -1
		if zr, zerr := gzip.NewReader(bytes.NewReader(data)); zerr == nil {
			expanded, _ = io.Copy(io.Discard, io.LimitReader(zr, fuzzExpandLimit+1))
		}
		if err != nil {
			msg := err.Error()
			overLimit := fmt.Sprintf("the archive is larger than %d bytes once decompressed, the most Flotilla expands", fuzzExpandLimit)
			require.True(t, strings.HasPrefix(msg, "not a chart archive") || msg == overLimit, "%v", err)
			if expanded > fuzzExpandLimit {
				require.Equal(t, overLimit, msg, "past the bound, nothing else is looked at")
			}
			return
		}
		require.LessOrEqual(t, expanded, int64(fuzzExpandLimit))
		var held int64
		hasChart := false
		for _, file := range files {
			held += int64(len(file.Name) + len(file.Data))
			require.LessOrEqual(t, int64(len(file.Data)), loader.MaxDecompressedFileSize, file.Name)
			require.False(t, path.IsAbs(file.Name), file.Name)
			require.Equal(t, path.Clean(file.Name), file.Name)
			require.False(t, strings.HasPrefix(file.Name, ".."), file.Name)
			hasChart = hasChart || file.Name == "Chart.yaml"
		}
		require.True(t, hasChart)
		require.LessOrEqual(t, held, int64(fuzzExpandLimit), "names and contents together stay within the bound")
		require.LessOrEqual(t, len(files), fuzzExpandLimit/512, "every file costs a header of the stream")

		// What load does next with the files: it may refuse them, never crash.
		_, _ = loader.LoadFiles(files)
	})
}

// Helm's loader bounds only what files hold: an archive of empty files with long names is refused by the
// stream's bound before Helm holds any of it, and would otherwise be read whole.
func TestAnArchiveOfLongNamesIsRefusedBeforeItIsHeld(t *testing.T) {
	data := longNames(t, 64, 4<<10)
	require.Less(t, len(data), 16<<10)
	files, err := loader.LoadArchiveFiles(bytes.NewReader(data))
	require.NoError(t, err, "Helm alone takes it")
	require.Len(t, files, 65)

	_, err = expandWithin(data, 128<<10)
	require.EqualError(t, err, "the archive is larger than 131072 bytes once decompressed, the most Flotilla expands")
	_, err = expandWithin(data, 1<<20)
	require.NoError(t, err)
}

// At the real bound, through the cache: a 300 KiB archive that expands to 150 MiB of names is refused naming
// the chart, having held next to nothing.
func TestAChartArchivePastTheExpandedBoundIsRefusedNamingTheChart(t *testing.T) {
	// Gzip reads concatenated members as one stream: one entry, compressed once, repeated.
	member := func(entry func(tw *tar.Writer)) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		entry(tw)
		require.NoError(t, tw.Flush())
		require.NoError(t, zw.Close())
		return buf.Bytes()
	}
	chartYAML := []byte("apiVersion: v2\nname: web\nversion: 1.0.0\n")
	data := member(func(tw *tar.Writer) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "web/Chart.yaml", Mode: 0o644, Size: int64(len(chartYAML))}))
		_, err := tw.Write(chartYAML)
		require.NoError(t, err)
	})
	longName := member(func(tw *tar.Writer) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "web/" + strings.Repeat("a", 512<<10), Mode: 0o644}))
	})
	for range 300 {
		data = append(data, longName...)
	}
	require.Less(t, len(data), 1<<20)

	f, _ := newFetcher(t)
	f.init()
	lock := api.ChartLock{URL: "https://charts.example.com/web-1.0.0.tgz", Digest: digestOf(data)}
	require.NoError(t, f.store(lock.Digest, data))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := f.archiveFiles(context.Background(), lock, nil)
	runtime.ReadMemStats(&after)
	require.EqualError(t, err, "chart https://charts.example.com/web-1.0.0.tgz: the archive is larger than 128 MiB once decompressed, the most Flotilla expands")
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "refused without holding what it expands to")
}

// ociManifest is a chart's manifest as Helm pushes it, with the given layers.
func ociManifest(layers ...ocispec.Descriptor) []byte {
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{MediaType: helmregistry.ConfigMediaType, Digest: digest.FromString("{}"), Size: 2},
		Layers: layers}
	m.SchemaVersion = 2
	data, _ := json.Marshal(m)
	return data
}

// A manifest is whatever the registry serves for a tag. chartLayerOf refuses it or returns its chart layer,
// with a sha256 digest and a size within the archive bound, never from bytes that do not match the digest
// the registry gave for them.
func FuzzChartLayerOf(f *testing.F) {
	layer := ocispec.Descriptor{MediaType: helmregistry.ChartLayerMediaType, Digest: digest.FromString("chart"), Size: 1234}
	prov := ocispec.Descriptor{MediaType: helmregistry.ProvLayerMediaType, Digest: digest.FromString("prov"), Size: 10}
	legacy := ocispec.Descriptor{MediaType: helmregistry.LegacyChartLayerMediaType, Digest: digest.FromString("legacy"), Size: 99}
	sha512 := layer
	sha512.Digest = digest.SHA512.FromString("chart")
	huge := layer
	huge.Size = DefaultMaxArchiveBytes + 1
	bad := layer
	bad.Digest = "sha256:XYZ"
	for _, seed := range []struct {
		data       []byte
		descDigest string
	}{
		{ociManifest(layer, prov), ""},
		{ociManifest(prov, layer), "match"},
		{ociManifest(legacy), "match"},
		{ociManifest(layer), digest.FromString("something else").String()},
		{ociManifest(sha512), ""},
		{ociManifest(huge), ""},
		{ociManifest(bad, layer), ""},
		{ociManifest(prov), ""},
		{ociManifest(), "sha512:" + strings.Repeat("0", 128)},
		{[]byte(`{"layers": {}}`), ""},
		{[]byte(`{"manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json"}]}`), ""},
		{[]byte("null"), "sha256:short"},
		{[]byte(""), ""},
	} {
		f.Add(seed.data, seed.descDigest)
	}
	f.Fuzz(func(t *testing.T, data []byte, descDigest string) {
		desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(descDigest), Size: int64(len(data))}
		if descDigest == "match" {
			desc.Digest = digest.FromBytes(data)
		}
		got, err := chartLayerOf(desc, data, DefaultMaxArchiveBytes)
		checked := desc.Digest != "" && desc.Digest.Validate() == nil && desc.Digest.Algorithm().Available()
		if checked && desc.Digest.Algorithm().FromBytes(data) != desc.Digest {
			require.EqualError(t, err, "the manifest does not match its digest "+desc.Digest.String())
			return
		}
		if err != nil {
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "the manifest ") || strings.HasPrefix(msg, "the chart") ||
				strings.HasPrefix(msg, "not a chart: "), "%v", err)
			return
		}
		require.Contains(t, []string{helmregistry.ChartLayerMediaType, helmregistry.LegacyChartLayerMediaType}, got.MediaType)
		require.Equal(t, digest.SHA256, got.Digest.Algorithm())
		require.NoError(t, got.Digest.Validate())
		_, err = parseDigest(got.Digest.String())
		require.NoError(t, err, "the lock's digest is one the cache takes")
		require.LessOrEqual(t, got.Size, int64(DefaultMaxArchiveBytes))
		require.LessOrEqual(t, len(data), maxManifestBytes)
	})
}
