package webhook

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/flotilla-gitops/flotilla/internal/bytesize"
)

const (
	// DefaultMaxBody is the largest payload read unless configured otherwise. A push payload is a few KiB
	// (GitLab lists at most 20 commits); GitHub's lists every commit with up to 5,000 paths per file list,
	// which can reach a few MiB for a push that rewrites a whole site. A push over the limit is refused
	// (413, visible in the provider's delivery log) and reaches its GitRepos at their next poll.
	DefaultMaxBody = 4 << 20
	// MaxBodyCeiling is the most a limit may be: GitHub drops any payload over 25 MB, GitLab caps its own
	// at 25 MiB.
	MaxBodyCeiling = 25 << 20
	// DefaultMaxInFlight is how many deliveries are read, verified and handled at once. Pushes are rare and
	// handled in well under a second; with DefaultMaxBody it bounds buffered payloads to 32 MiB and the
	// listings the webhook asks of Temporal visibility to 8 at a time.
	DefaultMaxInFlight = 8
	// DefaultMaxPerSource is how many of those slots one source address may hold: a sender with a
	// well-formed signature header (which only the body can disprove) and a slow body cannot take them all.
	DefaultMaxPerSource = 2
	// DefaultBodyDeadline is how long a delivery's body may take to arrive once its slot is taken. A
	// provider sends the body with the headers; one still trickling in is not a provider's.
	DefaultBodyDeadline = 5 * time.Second
	// busyRetryAfter is the Retry-After of a delivery turned away by the in-flight limit.
	busyRetryAfter = 2 * time.Second
)

// Limits bound what deliveries can cost the worker. Zero fields take the defaults.
type Limits struct {
	// MaxBody is the largest payload read, in bytes (DefaultMaxBody when 0, at most MaxBodyCeiling).
	MaxBody int64
	// MaxInFlight is how many deliveries are being read, verified or handled at once (DefaultMaxInFlight
	// when 0); more are answered 503 with Retry-After without reading their bodies.
	MaxInFlight int
	// MaxPerSource is how many of them one remote address may hold (DefaultMaxPerSource when 0).
	MaxPerSource int
	// BodyDeadline bounds the reading of a body (DefaultBodyDeadline when 0).
	BodyDeadline time.Duration
}

func (l Limits) withDefaults() (Limits, error) {
	if l.MaxBody == 0 {
		l.MaxBody = DefaultMaxBody
	}
	if l.MaxInFlight == 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	if l.MaxPerSource == 0 {
		l.MaxPerSource = min(DefaultMaxPerSource, l.MaxInFlight)
	}
	if l.BodyDeadline == 0 {
		l.BodyDeadline = DefaultBodyDeadline
	}
	if l.MaxBody < 0 || l.MaxBody > MaxBodyCeiling {
		return l, fmt.Errorf("webhook: body limit (--webhook-max-body) must be between 1 byte and %s, the most a provider sends; got %d bytes",
			bytesize.Format(MaxBodyCeiling), l.MaxBody)
	}
	if l.MaxInFlight < 0 || l.MaxPerSource < 0 || l.BodyDeadline < 0 {
		return l, fmt.Errorf("webhook: in-flight limits and the body deadline must be positive; got %d, %d a source, %s",
			l.MaxInFlight, l.MaxPerSource, l.BodyDeadline)
	}
	return l, nil
}

// sources counts the slots each remote address holds.
type sources struct {
	mu   sync.Mutex
	held map[string]int
}

// take reserves a slot for addr unless it holds max already; release gives it back.
func (s *sources) take(addr string, max int) (release func(), ok bool) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[string]int{}
	}
	if s.held[host] >= max {
		return nil, false
	}
	s.held[host]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.held[host]--; s.held[host] <= 0 {
			delete(s.held, host)
		}
	}, true
}

// errTooLarge names the limit a payload exceeded.
type errTooLarge struct{ limit int64 }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("payload larger than the limit of %s (%d bytes; --webhook-max-body)", bytesize.Format(e.limit), e.limit)
}

// readBody reads at most limit bytes. A declared Content-Length over the limit is refused before a byte
// is read; a declared length is read into a buffer of exactly that size, since io.ReadAll's doubling
// would allocate about twice the payload; a chunked body stops at the limit.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errTooLarge{limit}
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	var (
		data []byte
		err  error
	)
	if r.ContentLength >= 0 {
		data = make([]byte, r.ContentLength)
		_, err = io.ReadFull(body, data)
	} else {
		data, err = io.ReadAll(body)
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errTooLarge{limit}
	}
	return data, err
}
