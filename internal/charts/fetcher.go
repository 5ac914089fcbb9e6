package charts

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
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
	// AllowNetworks are the loopback, private and link-local networks the Fetcher may dial (public
	// addresses it always may); AllowEveryNetwork lifts the restriction (the CLI, on its user's behalf).
	AllowNetworks     []netip.Prefix
	AllowEveryNetwork bool
	// Fetched, when set, is told of every archive download (a cache miss) and how it ended, for metrics;
	// scheme is the URL's (https, http, oci).
	Fetched func(scheme string, err error)

	initOnce sync.Once
	mu       sync.Mutex
	clients  map[string]*http.Client
	indexes  *sizedLRU[*indexMemo]
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
		f.indexes = newSizedLRU[*indexMemo](indexMemoryBytes)
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
// On failure the lock's Error says why, and errors.As finds a *SourceError in the error (one per failed
// dependency); a context that ended is still recognisable with errors.Is.
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
		// A third-party chart's Chart.yaml names its dependencies' repositories, and the GitRepo's
		// credentials were given for the chart's own: a dependency gets them only from that same origin.
		if lock.Dependencies, err = f.LockDependencies(ctx, c, boundTo(creds, lock.CredentialsOrigin), nil); err != nil {
			return api.ChartLock{}, err
		}
		for i := range lock.Dependencies {
			if lock.Dependencies[i].CredentialsOrigin != lock.CredentialsOrigin {
				lock.Dependencies[i].CredentialsOrigin = ""
			}
		}
	}
	return lock, nil
}
