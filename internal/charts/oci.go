package charts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	helmregistry "helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/flotilla-gitops/flotilla/api"
)

// Charts in OCI registries are read with oras-go, as Helm's registry client does, but without that
// client: it reads and writes the user's registry credentials files and takes no context. Credentials
// are set on each client instead; nothing is written to disk.

// maxManifestBytes bounds a manifest: a chart's has three small descriptors.
const maxManifestBytes = 4 << 20

// maxTags bounds a repository's tag list, read page after page as the registry serves it: a registry
// that never stops paging would otherwise be read until the request's deadline, into memory.
const maxTags = 10_000

var errTooManyTags = fmt.Errorf("the repository lists more than %d tags, the most Flotilla reads", maxTags)

// tagsMemo is a registry repository's tag list, used without asking again while fresh.
type tagsMemo struct {
	versions []string
	checked  time.Time
}

// ociRepository is a client of the OCI repository ref (registry/path/name) with a's credentials and TLS.
func (f *Fetcher) ociRepository(ref string, a *Auth) (*remote.Repository, error) {
	repo, err := remote.NewRepository(ref)
	if err != nil {
		return nil, fmt.Errorf("not a valid OCI reference: %v", err)
	}
	client, err := f.httpClient(a)
	if err != nil {
		return nil, err
	}
	host := repo.Reference.Registry
	key := host + "\x00" + a.fingerprint()
	f.mu.Lock()
	defer f.mu.Unlock()
	ac, ok := f.ociClients[key]
	if !ok {
		ac = &auth.Client{Client: client, Cache: auth.NewCache()}
		if a != nil && (a.Username != "" || a.Password != "") {
			ac.Credential = auth.StaticCredential(host, auth.Credential{Username: a.Username, Password: a.Password})
		}
		f.ociClients[key] = ac
	}
	repo.Client = ac
	return repo, nil
}

// resolveOCI pins an OCI chart: the newest tag matching want (a tag's '_' stands for a version's '+', as
// Helm pushes them), and the digest of the chart layer its manifest names, fetched into the cache unless
// it is there already.
func (f *Fetcher) resolveOCI(ctx context.Context, name, ref, want string, creds Credentials) (api.ChartLock, error) {
	ociURL := "oci://" + ref
	origin := originOf(ociURL)
	creds = boundTo(creds, origin)
	a, err := authFor(creds, ociURL)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, Err: err}
	}
	repo, err := f.ociRepository(ref, a)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, Err: err}
	}
	versions, err := f.ociVersions(ctx, repo, ref, a)
	if err != nil {
		return api.ChartLock{}, sourceError(name, "list tags", err)
	}
	version, err := pickVersion(versions, want)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, URL: ociURL, Err: err}
	}
	tag := strings.ReplaceAll(version, "+", "_")
	layer, err := f.chartLayer(ctx, repo, ociURL, tag)
	if err != nil {
		return api.ChartLock{}, sourceError(name, "GET manifest "+tag, err)
	}
	lock := api.ChartLock{URL: ociURL + ":" + tag, Version: version, Digest: layer.Digest.String(), CredentialsOrigin: origin}
	// As for an index's digest: the registry must serve the layer it names, once per process, before the
	// cache answers for it.
	if f.servedBefore(ociURL, a, lock.Digest) {
		return lock, nil
	}
	data, err := f.ociBlob(ctx, lock, creds)
	if f.Fetched != nil {
		f.Fetched("oci", err)
	}
	if err != nil {
		return api.ChartLock{}, err
	}
	if got := digestOf(data); got != lock.Digest {
		return api.ChartLock{}, &SourceError{Source: name, URL: lock.URL, Err: fmt.Errorf("%w (the manifest names %s, the blob is %s)", ErrChanged, lock.Digest, got)}
	}
	if _, err := f.keep(data); err != nil {
		return api.ChartLock{}, &SourceError{Source: name, URL: lock.URL, Err: err}
	}
	f.rememberServed(ociURL, a, lock.Digest)
	return lock, nil
}

// ociVersions lists the repository's tags that are versions, shared for IndexTTL like an index.yaml.
func (f *Fetcher) ociVersions(ctx context.Context, repo *remote.Repository, ref string, a *Auth) ([]string, error) {
	key := "tags\x00" + ref + "\x00" + a.fingerprint()
	f.mu.Lock()
	memo := f.tags[key]
	f.mu.Unlock()
	if memo != nil && f.fresh(ctx, memo.checked) {
		return memo.versions, nil
	}
	v, err := f.flight(ctx, flightKey(ctx, key), func(ctx context.Context) (any, error) {
		ctx, cancel := context.WithTimeout(ctx, f.timeout())
		defer cancel()
		var versions []string
		err := repo.Tags(ctx, "", func(tags []string) error {
			for _, t := range tags {
				versions = append(versions, strings.ReplaceAll(t, "_", "+"))
			}
			if len(versions) > maxTags {
				return errTooManyTags
			}
			return nil
		})
		if errors.Is(err, errTooManyTags) {
			return nil, &requestError{url: "oci://" + ref, status: http.StatusOK, err: errTooManyTags}
		}
		if err != nil {
			return nil, ociError(err, "oci://"+ref)
		}
		f.mu.Lock()
		f.tags[key] = &tagsMemo{versions: versions, checked: f.now()}
		f.mu.Unlock()
		return versions, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]string), nil
}

// chartLayer reads the manifest of tag and returns its chart layer.
func (f *Fetcher) chartLayer(ctx context.Context, repo *remote.Repository, ociURL, tag string) (ocispec.Descriptor, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	desc, rc, err := repo.Manifests().FetchReference(ctx, tag)
	if err != nil {
		return ocispec.Descriptor{}, ociError(err, ociURL+":"+tag)
	}
	defer rc.Close()
	fail := func(err error) (ocispec.Descriptor, error) {
		return ocispec.Descriptor{}, &requestError{url: ociURL + ":" + tag, status: http.StatusOK, err: err}
	}
	if desc.Size > maxManifestBytes {
		return fail(fmt.Errorf("the manifest is larger than %s, the most Flotilla reads", mib(maxManifestBytes)))
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxManifestBytes+1))
	if err != nil {
		return ocispec.Descriptor{}, ociError(err, ociURL+":"+tag)
	}
	layer, err := chartLayerOf(desc, data, f.maxArchiveBytes())
	if err != nil {
		return fail(err)
	}
	return layer, nil
}

// chartLayerOf is the chart layer of the manifest data, which the registry served as desc: the registry's
// answer, checked against the digest it gave and read without trusting anything else it says.
func chartLayerOf(desc ocispec.Descriptor, data []byte, maxArchive int64) (ocispec.Descriptor, error) {
	if len(data) > maxManifestBytes {
		return ocispec.Descriptor{}, fmt.Errorf("the manifest is larger than %s, the most Flotilla reads", mib(maxManifestBytes))
	}
	if desc.Digest != "" && desc.Digest.Validate() == nil && desc.Digest.Algorithm().Available() && desc.Digest.Algorithm().FromBytes(data) != desc.Digest {
		return ocispec.Descriptor{}, fmt.Errorf("the manifest does not match its digest %s", desc.Digest)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("the manifest does not parse: %v", err)
	}
	for _, l := range m.Layers {
		if l.MediaType == helmregistry.ChartLayerMediaType || l.MediaType == helmregistry.LegacyChartLayerMediaType {
			// Validate first: Algorithm panics on a digest without a colon, and a registry writes the manifest.
			if l.Digest.Validate() != nil || l.Digest.Algorithm() != digest.SHA256 {
				return ocispec.Descriptor{}, fmt.Errorf("the chart layer's digest %q is not sha256", l.Digest)
			}
			if l.Size > maxArchive {
				return ocispec.Descriptor{}, fmt.Errorf("the chart is larger than %s, the most Flotilla reads", mib(maxArchive))
			}
			return l, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("not a chart: the manifest has no %s layer (media type %s)", helmregistry.ChartLayerMediaType, desc.MediaType)
}

// ociBlob downloads the chart layer a lock names (oci://registry/path/name:tag) by its digest.
func (f *Fetcher) ociBlob(ctx context.Context, lock api.ChartLock, creds Credentials) ([]byte, error) {
	name := "chart " + redact(lock.URL)
	ref := strings.TrimPrefix(lock.URL, "oci://")
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref = ref[:i]
	}
	a, err := authFor(creds, "oci://"+ref)
	if err != nil {
		return nil, &SourceError{Source: name, Err: err}
	}
	repo, err := f.ociRepository(ref, a)
	if err != nil {
		return nil, &SourceError{Source: name, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	desc, rc, err := repo.Blobs().FetchReference(ctx, lock.Digest)
	if err != nil {
		return nil, sourceError(name, "GET blob "+lock.Digest, ociError(err, lock.URL))
	}
	defer rc.Close()
	tooBig := &SourceError{Source: name, Op: "GET blob " + lock.Digest, URL: lock.URL, Status: http.StatusOK,
		Err: fmt.Errorf("the archive is larger than %s, the most Flotilla reads", mib(f.maxArchiveBytes()))}
	if desc.Size > f.maxArchiveBytes() {
		return nil, tooBig
	}
	data, err := io.ReadAll(io.LimitReader(rc, f.maxArchiveBytes()+1))
	if err != nil {
		return nil, sourceError(name, "GET blob "+lock.Digest, ociError(err, lock.URL))
	}
	if int64(len(data)) > f.maxArchiveBytes() {
		return nil, tooBig
	}
	return data, nil
}

// ociError is a failed registry request as a requestError: the status and the registry's error codes,
// or why the registry did not answer.
func ociError(err error, url string) error {
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		msg := fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		var details []string
		for _, e := range resp.Errors {
			if e.Message != "" {
				details = append(details, redactAll(e.Message))
			}
		}
		if len(details) > 0 {
			msg += " (" + strings.Join(details, "; ") + ")"
		}
		return &requestError{url: url, status: resp.StatusCode, err: &cleanError{msg: msg, orig: &statusError{resp.StatusCode}}}
	}
	switch {
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return &requestError{url: url, status: http.StatusUnauthorized,
			err: fmt.Errorf("401 Unauthorized: the registry asks for credentials and none are configured for it")}
	case errors.Is(err, errdef.ErrNotFound):
		return &requestError{url: url, status: http.StatusNotFound, err: fmt.Errorf("404 Not Found")}
	}
	return &requestError{url: url, err: transportError(err)}
}
