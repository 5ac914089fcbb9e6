package webhook

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// watchedBody counts what the handler reads of a request body.
type watchedBody struct {
	r     io.Reader
	calls atomic.Int64
	bytes atomic.Int64
}

func watch(body []byte) *watchedBody { return &watchedBody{r: bytes.NewReader(body)} }

func (b *watchedBody) Read(p []byte) (int, error) {
	b.calls.Add(1)
	n, err := b.r.Read(p)
	b.bytes.Add(int64(n))
	return n, err
}

func (b *watchedBody) untouched() bool { return b.calls.Load() == 0 }

// withBody gives r a watched body, declared with length (-1: chunked, no Content-Length).
func withBody(r *http.Request, body *watchedBody, length int64) *http.Request {
	r.Body = io.NopCloser(body)
	r.ContentLength = length
	return r
}

// paddedPush is a genuine push of refs/heads/dev padded with whitespace to size bytes.
func paddedPush(size int) []byte {
	push := githubPushBody("refs/heads/dev")
	return append(push[:len(push)-1], append(bytes.Repeat([]byte(" "), size-len(push)), '}')...)
}

func TestADeliveryDeclaringMoreThanTheLimitIsRefusedBeforeAByteIsRead(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	push := githubPushBody("refs/heads/main")
	body := watch(push)
	w, res := serve(h, withBody(githubRequest("push", nil, sign(secret, push)), body, DefaultMaxBody+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	require.Contains(t, res.Message, "limit of 4 MiB")
	require.True(t, body.untouched(), "the declared length alone refuses it")
	require.Empty(t, repos.syncs())

	// A configured limit is the one enforced and named.
	h, _ = newLimitedHandler(t, repos, Limits{MaxBody: 64 << 10})
	push = paddedPush(64<<10 + 1)
	body = watch(push)
	w, res = serve(h, withBody(githubRequest("push", nil, sign(secret, push)), body, int64(len(push))))
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	require.Contains(t, res.Message, "limit of 64 KiB (65536 bytes")
	require.True(t, body.untouched())
	require.Empty(t, repos.syncs())
}

func TestAnUndeclaredBodyIsCutAtTheLimit(t *testing.T) {
	repos := fleetOf()
	h, _ := newLimitedHandler(t, repos, Limits{MaxBody: 64 << 10})
	push := paddedPush(1 << 20)
	body := watch(push)
	w, res := serve(h, withBody(githubRequest("push", nil, sign(secret, push)), body, -1))
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	require.Contains(t, res.Message, "limit of 64 KiB")
	require.LessOrEqual(t, body.bytes.Load(), int64(64<<10+1), "reading stops one byte past the limit")
	require.Empty(t, repos.syncs())

	within := paddedPush(64 << 10)
	w, res = serve(h, withBody(githubRequest("push", nil, sign(secret, within)), watch(within), -1))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, []string{"apps-dev"}, res.Synced, "a payload of exactly the limit is read")
}

func TestAPayloadIsReadIntoOneBufferOfItsSize(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	push := paddedPush(3 << 20)
	r := githubRequest("push", push, sign(secret, push))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w, res := serve(h, r)
	runtime.ReadMemStats(&after)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, []string{"apps-dev"}, res.Synced)
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(len(push))*3/2,
		"a 3 MiB push allocated %d bytes: reading grew its buffer instead of sizing it from Content-Length", allocated)
}

func TestAGitHubDeliveryWithoutAWellFormedSignatureIsRefusedUnread(t *testing.T) {
	push := githubPushBody("refs/heads/main")
	for name, sig := range map[string]string{
		"missing":       "",
		"sha1 prefix":   strings.Replace(sign(secret, push), "sha256=", "sha1=", 1),
		"not hex":       "sha256=zz",
		"truncated mac": sign(secret, push)[:20],
	} {
		repos := fleetOf()
		h, _ := newHandler(t, repos)
		body := watch(push)
		w, _ := serve(h, withBody(githubRequest("push", nil, sig), body, int64(len(push))))
		require.Equal(t, http.StatusUnauthorized, w.Code, name)
		require.True(t, body.untouched(), "%s: a request that cannot be signed costs no read", name)
		require.Empty(t, repos.syncs(), name)
	}
}

func TestAGitLabDeliveryWithAWrongTokenIsRefusedUnread(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	push := gitlabPushBody("refs/heads/main")
	for name, token := range map[string]string{"missing": "", "wrong": "guessed"} {
		body := watch(push)
		w, _ := serve(h, withBody(gitlabRequest("Push Hook", nil, token), body, int64(len(push))))
		require.Equal(t, http.StatusUnauthorized, w.Code, name)
		require.True(t, body.untouched(), name)
	}
	require.Empty(t, repos.syncs())
}

// gatedRepos holds every List until released, telling the test when one has started.
type gatedRepos struct {
	*fakeRepos
	listing chan struct{}
	release chan struct{}
}

func gate(repos *fakeRepos) *gatedRepos {
	return &gatedRepos{fakeRepos: repos, listing: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *gatedRepos) List(ctx context.Context, matches func(string) bool) ([]GitRepo, error) {
	g.listing <- struct{}{}
	<-g.release
	return g.fakeRepos.List(ctx, matches)
}

// waitListing waits until n deliveries are inside List.
func (g *gatedRepos) waitListing(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-g.listing:
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d deliveries reached List", i, n)
		}
	}
}

// serveAsync serves r in the background; the answer comes on the channel.
func serveAsync(h http.Handler, r *http.Request) <-chan *httptest.ResponseRecorder {
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		done <- w
	}()
	return done
}

func answer(t *testing.T, done <-chan *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case w := <-done:
		return w
	case <-time.After(30 * time.Second):
		t.Fatal("no answer: the delivery is still being handled")
		return nil
	}
}

func TestDeliveriesBeyondTheInFlightLimitAreTurnedAwayAtOnceUnread(t *testing.T) {
	repos := gate(fleetOf())
	h, _ := newLimitedHandler(t, repos, Limits{MaxInFlight: 2})
	dev, tag := githubPushBody("refs/heads/dev"), githubPushBody("refs/tags/v1")
	first := serveAsync(h, githubRequest("push", dev, sign(secret, dev)))
	second := serveAsync(h, githubRequest("push", tag, sign(secret, tag)))
	repos.waitListing(t, 2)

	mainPush := githubPushBody("refs/heads/main")
	body := watch(mainPush)
	w := answer(t, serveAsync(h, withBody(githubRequest("push", nil, sign(secret, mainPush)), body, int64(len(mainPush)))))
	require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
	require.Equal(t, "2", w.Header().Get("Retry-After"))
	require.Contains(t, w.Body.String(), "busy")
	require.True(t, body.untouched(), "a delivery turned away is not read")

	close(repos.release)
	require.Equal(t, http.StatusOK, answer(t, first).Code)
	require.Equal(t, http.StatusOK, answer(t, second).Code)
	require.ElementsMatch(t, []string{"apps-dev", "apps-v1"}, repos.syncs())

	w = answer(t, serveAsync(h, githubRequest("push", mainPush, sign(secret, mainPush))))
	require.Equal(t, http.StatusOK, w.Code, "the slots are free again once the deliveries are answered")
	require.ElementsMatch(t, []string{"apps-dev", "apps-v1", "apps-main", "apps-ssh", "apps-head"}, repos.syncs())
}

func TestLimitsOutOfRangeAreRefused(t *testing.T) {
	for _, l := range []Limits{{MaxBody: -1}, {MaxBody: MaxBodyCeiling + 1}, {MaxInFlight: -1}} {
		_, err := New([]byte(secret), fleetOf(), l, nil)
		require.Error(t, err, "%+v", l)
	}
	_, err := New([]byte(secret), fleetOf(), Limits{MaxBody: 30 << 20}, nil)
	require.ErrorContains(t, err, "25 MiB")
	require.ErrorContains(t, err, "--webhook-max-body")
}

// A sender with a well-formed signature header and a body that never comes holds at most MaxPerSource
// slots: a genuine push from anywhere else is still handled at once.
func TestOneSourceWithSlowBodiesCannotTakeEverySlot(t *testing.T) {
	h, _ := newLimitedHandler(t, fleetOf(), Limits{MaxInFlight: 8})
	push := githubPushBody("refs/heads/main")
	type delivery struct {
		i int
		w *httptest.ResponseRecorder
	}
	stalled := make([]*io.PipeWriter, 3)
	answered := make(chan delivery, 3)
	for i := range 3 {
		pr, pw := io.Pipe()
		stalled[i] = pw
		r := githubRequest("push", nil, sign(secret, push))
		r.RemoteAddr = "192.0.2.66:40000"
		r.Body, r.ContentLength = pr, int64(len(push))
		go func() { w := httptest.NewRecorder(); h.ServeHTTP(w, r); answered <- delivery{i, w} }()
	}
	var turnedAway delivery
	select {
	case turnedAway = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery was turned away")
	}
	require.Equal(t, http.StatusServiceUnavailable, turnedAway.w.Code, "a third slot for the same address")
	require.Contains(t, turnedAway.w.Body.String(), "from this address")

	genuine := githubRequest("push", push, sign(secret, push))
	genuine.RemoteAddr = "140.82.115.1:443"
	w := answer(t, serveAsync(h, genuine))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())

	for i, pw := range stalled {
		if i != turnedAway.i {
			require.NoError(t, pw.CloseWithError(errors.New("gave up")))
		}
	}
	for range 2 {
		select {
		case d := <-answered:
			require.Equal(t, http.StatusBadRequest, d.w.Code, "a body that never came")
		case <-time.After(30 * time.Second):
			t.Fatal("a stalled delivery was not answered once its body failed")
		}
	}
}

// Served for real, a body that trickles in is cut at the body deadline and its slot freed.
func TestABodyThatTricklesInIsCutAtTheDeadline(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret), 0o600))
	srv, err := Listen("127.0.0.1:0", secretFile, Limits{BodyDeadline: 300 * time.Millisecond}, fleetOf(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })

	push := githubPushBody("refs/heads/main")
	conn, err := net.Dial("tcp", srv.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	start := time.Now()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\n"+
		"X-GitHub-Delivery: slow-1\r\nX-Hub-Signature-256: %s\r\nContent-Length: %d\r\n\r\n%s",
		Path, sign(secret, push), len(push), push[:10])
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	require.Less(t, time.Since(start), 10*time.Second, "cut at the deadline, not at the server's read timeout")
}
