package charts

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// SourceError is a chart source, or one of its dependencies, that did not resolve or could not be
// fetched: its message names the source, the request and the server's answer, never a credential. The
// caller fails the bundle that needs the chart and leaves what already runs alone.
type SourceError struct {
	// Source names what failed: `helm.repo https://host/charts`, `helm.chart oci://host/path/web`, or
	// `chart "web": dependency "redis" (version ^17, repository https://host/charts)`.
	Source string
	// Op is the request or step that failed: `GET index.yaml`, `GET https://host/charts/web-1.0.0.tgz`.
	Op string
	// URL is the URL of the failed request, without credentials; empty when none was made.
	URL string
	// Status is the HTTP status the server answered; 0 when it did not answer (refused, timed out, TLS).
	Status int
	Err    error
}

func (e *SourceError) Error() string {
	var b strings.Builder
	for _, part := range []string{e.Source, e.Op} {
		if part != "" {
			b.WriteString(part)
			b.WriteString(": ")
		}
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *SourceError) Unwrap() error { return e.Err }

// ErrChanged is an archive whose bytes are not those the plan resolved: it is never deployed.
var ErrChanged = errors.New("the archive changed since it was resolved")

// statusError is an HTTP answer other than 200.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("%d %s", e.code, http.StatusText(e.code)) }

// requestError is a failed request; the Fetcher's callers turn it into a SourceError.
type requestError struct {
	url    string // redacted
	status int
	err    error
}

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

// sourceError wraps err (a requestError, or any error) as the SourceError of source, op.
func sourceError(source, op string, err error) error {
	if err == nil {
		return nil
	}
	var se *SourceError
	if errors.As(err, &se) {
		return err
	}
	out := &SourceError{Source: source, Op: op, Err: err}
	var re *requestError
	if errors.As(err, &re) {
		out.URL, out.Status = re.url, re.status
	}
	return out
}
