package charts

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/repo"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/flotilla-gitops/flotilla/api"
)

// Defaults of the Fetcher's bounds.
const (
	DefaultTimeout         = 30 * time.Second
	DefaultIndexTTL        = 5 * time.Second
	DefaultMaxArchiveBytes = 20 << 20
	DefaultMaxIndexBytes   = 64 << 20
	DefaultMemoryBytes     = 256 << 20
)

// Fetcher resolves chart sources and loads locked charts through a disk cache. One Fetcher serves a
// whole worker: concurrent calls share requests, and an archive is fetched once per digest, however many
// clusters render it. The zero value with Dir set is ready to use.
type Fetcher struct {
	// Dir is the cache directory; archives live in Dir/sha256/<hex>.tgz.
	Dir string
	// Timeout bounds each request, its body included (DefaultTimeout when zero).
	Timeout time.Duration
	// IndexTTL is how long an index.yaml or a registry's tag list is used without asking the server again
	// (DefaultIndexTTL when zero): a poll resolving many bundles from one repository reads it once.
	IndexTTL time.Duration
	// MaxArchiveBytes and MaxIndexBytes bound what is read (DefaultMaxArchiveBytes, DefaultMaxIndexBytes).
	MaxArchiveBytes, MaxIndexBytes int64
	// MemoryBytes bounds the expanded charts kept in memory (DefaultMemoryBytes when zero).
	MemoryBytes int64

	initOnce sync.Once
	mu       sync.Mutex
	clients  map[string]*http.Client
	indexes  map[string]*indexMemo
	archives map[string]*archiveMemo
	tags     map[string]*tagsMemo
	// ociClients hold, per registry and credentials, the scheme a registry asked for (basic or token) and
	// its tokens, so that only the first request of a repository is challenged.
	ociClients map[string]*auth.Client
	verified   map[string]bool
	files      *filesLRU
	flights    singleflight.Group
	// now is the clock of the memos (tests move it).
	now func() time.Time
}

// ResolveOptions are the fleet.yaml options that change how a source resolves.
type ResolveOptions struct {
	// DisableDependencyUpdate is helm.disableDependencyUpdate: Chart.yaml dependencies are not fetched.
	DisableDependencyUpdate bool
}

// archiveMemo is what the last GET of an archive URL returned, to revalidate it.
type archiveMemo struct {
	digest     string
	validators validators
}

func (f *Fetcher) init() {
	f.initOnce.Do(func() {
		f.clients = map[string]*http.Client{}
		f.indexes = map[string]*indexMemo{}
		f.archives = map[string]*archiveMemo{}
		f.tags = map[string]*tagsMemo{}
		f.ociClients = map[string]*auth.Client{}
		f.verified = map[string]bool{}
		mem := f.MemoryBytes
		if mem <= 0 {
			mem = DefaultMemoryBytes
		}
		f.files = newFilesLRU(mem)
		if f.now == nil {
			f.now = time.Now
		}
	})
}

func (f *Fetcher) timeout() time.Duration  { return orDefault(f.Timeout, DefaultTimeout) }
func (f *Fetcher) indexTTL() time.Duration { return orDefault(f.IndexTTL, DefaultIndexTTL) }
func (f *Fetcher) maxArchiveBytes() int64 {
	return orDefault(f.MaxArchiveBytes, DefaultMaxArchiveBytes)
}
func (f *Fetcher) maxIndexBytes() int64 { return orDefault(f.MaxIndexBytes, DefaultMaxIndexBytes) }

func orDefault[T int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// flight runs fn once for all concurrent callers of key. It runs detached from the first caller's
// cancellation (each request has its own deadline), so that one caller giving up does not fail the others;
// a caller whose context ends stops waiting.
func (f *Fetcher) flight(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	ch := f.flights.DoChan(key, func() (any, error) { return fn(context.WithoutCancel(ctx)) })
	select {
	case r := <-ch:
		return r.Val, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Resolve pins a remote chart source to the archive it names now: its URL, version and digest, and,
// unless opts.DisableDependencyUpdate, its Chart.yaml dependencies that the archive does not hold. The
// archive is fetched at most once per digest and kept in the cache, so the Loads that follow hit it.
// On failure the lock's Error says why and the error is a *SourceError.
func (f *Fetcher) Resolve(ctx context.Context, s Source, creds Credentials, opts ResolveOptions) (api.ChartLock, error) {
	f.init()
	lock := api.ChartLock{Source: s.Key()}
	out, err := f.resolve(ctx, s, creds, opts)
	if err != nil {
		lock.Error = err.Error()
		return lock, err
	}
	out.Source = lock.Source
	return out, nil
}

func (f *Fetcher) resolve(ctx context.Context, s Source, creds Credentials, opts ResolveOptions) (api.ChartLock, error) {
	name := s.String()
	t, err := s.target()
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, Err: err}
	}
	var lock api.ChartLock
	switch t.kind {
	case kindArchive:
		lock, err = f.resolveArchive(ctx, name, t.url, s.Version, creds)
	case kindIndex:
		lock, err = f.resolveIndex(ctx, name, t.url, t.chart, s.Version, creds)
	case kindOCI:
		lock, err = f.resolveOCI(ctx, name, t.url, s.Version, creds)
	}
	if err != nil {
		return api.ChartLock{}, err
	}
	if !opts.DisableDependencyUpdate {
		c, err := f.load(ctx, lock, creds)
		if err != nil {
			return api.ChartLock{}, err
		}
		if lock.Dependencies, err = f.LockDependencies(ctx, c, creds, nil); err != nil {
			return api.ChartLock{}, err
		}
	}
	return lock, nil
}

// resolveArchive pins helm.chart: https://…/web-1.2.0.tgz. helm.version, when set, must match the
// archive's version: a mismatch is an error rather than a surprise.
func (f *Fetcher) resolveArchive(ctx context.Context, name, url, want string, creds Credentials) (api.ChartLock, error) {
	a, err := authFor(creds, url)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, Err: err}
	}
	digest, err := f.archiveAt(ctx, url, a)
	if err != nil {
		return api.ChartLock{}, sourceError(name, "GET", err)
	}
	files, err := f.archiveFiles(ctx, api.ChartLock{URL: url, Digest: digest}, creds)
	if err != nil {
		return api.ChartLock{}, err
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, URL: url, Err: fmt.Errorf("not a chart archive: %v", err)}
	}
	if want != "" {
		if _, err := pickVersion([]string{c.Metadata.Version}, want); err != nil {
			return api.ChartLock{}, &SourceError{Source: name, URL: url,
				Err: fmt.Errorf("helm.version %q: the archive is version %s", want, c.Metadata.Version)}
		}
	}
	return api.ChartLock{URL: url, Version: c.Metadata.Version, Digest: digest}, nil
}

// resolveIndex pins helm.repo + helm.chart (+ helm.version) through the repository's index.yaml. When the
// index gives the archive's digest and the cache holds that archive, nothing more is read.
func (f *Fetcher) resolveIndex(ctx context.Context, name, repoURL, chartName, want string, creds Credentials) (api.ChartLock, error) {
	a, err := authFor(creds, repoURL)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, Err: err}
	}
	index, err := f.index(ctx, repoURL, a)
	if err != nil {
		return api.ChartLock{}, sourceError(name, "GET index.yaml", err)
	}
	cv, err := entry(index, chartName, want)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, Op: "chart " + strconv.Quote(chartName), URL: repoURL + "/index.yaml", Err: err}
	}
	archiveURL, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
	if err == nil {
		err = checkURL(archiveURL)
	}
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, URL: repoURL + "/index.yaml",
			Err: fmt.Errorf("chart %q version %s: URL %s: %v", chartName, cv.Version, redact(cv.URLs[0]), err)}
	}
	lock := api.ChartLock{URL: archiveURL, Version: cv.Version}
	if cv.Digest != "" && f.hasCached("sha256:"+strings.ToLower(cv.Digest)) {
		lock.Digest = "sha256:" + strings.ToLower(cv.Digest)
		return lock, nil
	}
	aa, err := authFor(creds, archiveURL)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, Err: err}
	}
	if lock.Digest, err = f.archiveAt(ctx, archiveURL, aa); err != nil {
		return api.ChartLock{}, sourceError(name, "GET "+archiveURL, err)
	}
	return lock, nil
}

// archiveAt is the digest of the archive at url, fetched into the cache, or revalidated with a
// conditional GET when this process fetched it before and the cache still holds it.
func (f *Fetcher) archiveAt(ctx context.Context, url string, a *Auth) (string, error) {
	key := "archive\x00" + url + "\x00" + a.fingerprint()
	v, err := f.flight(ctx, key, func(ctx context.Context) (any, error) {
		f.mu.Lock()
		memo := f.archives[key]
		f.mu.Unlock()
		var cond *validators
		if memo != nil && (memo.validators != validators{}) && f.hasCached(memo.digest) {
			cond = &memo.validators
		}
		resp, err := f.get(ctx, url, a, f.maxArchiveBytes(), "the archive", cond)
		if err != nil {
			return nil, err
		}
		if resp.notModified {
			return memo.digest, nil
		}
		digest, err := f.keep(resp.body)
		if err != nil {
			return nil, &requestError{url: redact(url), status: 200, err: err}
		}
		f.mu.Lock()
		f.archives[key] = &archiveMemo{digest: digest, validators: resp.validators}
		f.mu.Unlock()
		return digest, nil
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// keep checks that data is a chart archive, stores it in the cache and memory, and returns its digest.
func (f *Fetcher) keep(data []byte) (string, error) {
	files, err := expand(data)
	if err != nil {
		return "", err
	}
	digest := digestOf(data)
	if err := f.store(digest, data); err != nil {
		return "", err
	}
	f.files.put(digest, files)
	return digest, nil
}

// Load is the chart a lock pins, with the dependencies the lock lists added as subcharts: from memory or
// the cache when this worker has the archive, else fetched once (concurrent Loads of one digest share the
// download) and refused unless it hashes to the lock's digest. Each call returns a chart of its own.
func (f *Fetcher) Load(ctx context.Context, lock api.ChartLock, creds Credentials) (*chart.Chart, error) {
	f.init()
	if lock.Error != "" {
		return nil, &SourceError{Source: "chart " + lock.Source, Err: fmt.Errorf("%s", lock.Error)}
	}
	c, err := f.load(ctx, lock, creds)
	if err != nil {
		return nil, err
	}
	if err := f.AddDependencies(ctx, c, lock.Dependencies, creds, nil); err != nil {
		return nil, err
	}
	return c, nil
}

// load parses the archive of lock, without its locked dependencies.
func (f *Fetcher) load(ctx context.Context, lock api.ChartLock, creds Credentials) (*chart.Chart, error) {
	files, err := f.archiveFiles(ctx, lock, creds)
	if err != nil {
		return nil, err
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, &SourceError{Source: "chart " + lock.URL, Err: fmt.Errorf("not a chart archive: %v", err)}
	}
	return c, nil
}

// archiveFiles are the expanded files of lock's archive: from memory, else the disk cache, else fetched.
func (f *Fetcher) archiveFiles(ctx context.Context, lock api.ChartLock, creds Credentials) ([]*loader.BufferedFile, error) {
	name := "chart " + redact(lock.URL)
	if _, err := parseDigest(lock.Digest); err != nil {
		return nil, &SourceError{Source: name, Err: err}
	}
	if files, ok := f.files.get(lock.Digest); ok {
		return files, nil
	}
	v, err := f.flight(ctx, "load\x00"+lock.Digest, func(ctx context.Context) (any, error) {
		if data, ok := f.cached(lock.Digest); ok {
			files, err := expand(data)
			if err != nil {
				return nil, &SourceError{Source: name, Err: err}
			}
			f.files.put(lock.Digest, files)
			return files, nil
		}
		data, err := f.download(ctx, lock, creds)
		if err != nil {
			return nil, err
		}
		if got := digestOf(data); got != lock.Digest {
			return nil, &SourceError{Source: name, URL: redact(lock.URL),
				Err: fmt.Errorf("%w (resolved %s, fetched %s)", ErrChanged, lock.Digest, got)}
		}
		files, err := expand(data)
		if err != nil {
			return nil, &SourceError{Source: name, URL: redact(lock.URL), Err: err}
		}
		if err := f.store(lock.Digest, data); err != nil {
			return nil, err
		}
		f.files.put(lock.Digest, files)
		return files, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]*loader.BufferedFile), nil
}

// download fetches lock's archive from its URL (an OCI blob by digest).
func (f *Fetcher) download(ctx context.Context, lock api.ChartLock, creds Credentials) ([]byte, error) {
	name := "chart " + redact(lock.URL)
	switch schemeOf(lock.URL) {
	case "https", "http":
		a, err := authFor(creds, lock.URL)
		if err != nil {
			return nil, &SourceError{Source: name, Err: err}
		}
		resp, err := f.get(ctx, lock.URL, a, f.maxArchiveBytes(), "the archive", nil)
		if err != nil {
			return nil, sourceError(name, "GET", err)
		}
		return resp.body, nil
	case "oci":
		return f.ociBlob(ctx, lock, creds)
	default:
		return nil, &SourceError{Source: name, Err: fmt.Errorf("only https://, http:// and oci:// archives can be fetched")}
	}
}
