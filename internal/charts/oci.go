package charts

import (
	"context"
	"errors"

	"github.com/flotilla-gitops/flotilla/api"
)

var errOCINotYet = errors.New("charts from OCI registries are not supported yet")

func (f *Fetcher) resolveOCI(ctx context.Context, name, ref, want string, creds Credentials) (api.ChartLock, error) {
	return api.ChartLock{}, &SourceError{Source: name, Err: errOCINotYet}
}

func (f *Fetcher) ociBlob(ctx context.Context, lock api.ChartLock, creds Credentials) ([]byte, error) {
	return nil, &SourceError{Source: "chart " + redact(lock.URL), Err: errOCINotYet}
}
