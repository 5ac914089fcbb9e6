package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// Fuzz modes: how the delivery authenticates, whether it declares its length, and the body limit.
const (
	authGood      = 0
	authWrong     = 1
	authMissing   = 2
	authMalformed = 3
	modeChunked   = 1 << 2
	modeSmallBody = 1 << 3
	smallBody     = 1 << 10
	// maxAnswer bounds an answer: a JSON Response naming at most the fake's GitRepos, and messages that
	// clip what the sender chose.
	maxAnswer = 2 << 10
)

// FuzzWebhook sends any body under any event, for each provider, through the handler, signed right or
// wrong, with a declared length or chunked, under the default body limit or a small one. It checks that
// no delivery earns a 5xx (the fake GitRepos never fail) or an answer over maxAnswer, that nothing is
// synced and the GitRepos are not even listed without the secret or over the limit, that what a push
// syncs is exactly the running GitRepos of the pushed repository that follow the pushed ref, with ref and
// URLs read from the body, and that a GitHub push replayed under a new delivery ID syncs nothing again.
func FuzzWebhook(f *testing.F) {
	ghPush, glPush := githubPushBody("refs/heads/main"), gitlabPushBody("refs/heads/main")
	form := []byte("payload=" + url.QueryEscape(string(githubPushBody("refs/heads/dev"))))
	for _, s := range []struct {
		gitlab      bool
		event, ct   string
		body        []byte
		mode        uint8
		description string
	}{
		{false, "push", "application/json", ghPush, authGood, "signed push"},
		{false, "push", "application/json", githubPushBody("refs/tags/v1"), authGood | modeChunked, "tag push, chunked"},
		{false, "push", "application/x-www-form-urlencoded", form, authGood, "form-encoded push"},
		{false, "ping", "application/json", []byte(`{"zen":"Design for failure.","hook_id":1}`), authGood, "ping"},
		{false, "issues", "application/json", []byte(`{"action":"opened"}`), authGood, "not a push"},
		{false, "push", "application/json", ghPush, authWrong, "wrong signature"},
		{false, "push", "application/json", ghPush, authMissing, "no signature"},
		{false, "push", "application/json", ghPush, authMalformed, "malformed signature"},
		{false, "push", "application/json", paddedPush(smallBody + 1), authGood | modeSmallBody, "over the limit"},
		{false, "push", "application/json", paddedPush(smallBody + 1), authGood | modeSmallBody | modeChunked, "over the limit, chunked"},
		{false, "push", "application/json", []byte("{"), authGood, "not JSON"},
		{false, "push", "application/json", []byte(`{"ref":"refs/heads/main"}`), authGood, "no repository"},
		{false, "push", "application/x-www-form-urlencoded", []byte("payload=%zz"), authGood, "bad form"},
		{false, "push", "application/json", []byte(`{"ref":"refs/heads/main","repository":{"clone_url":"https:\/\/github.com\/org\/apps.git"}}`), authGood, "escaped URL"},
		{true, "Push Hook", "application/json", glPush, authGood, "GitLab push"},
		{true, "Tag Push Hook", "application/json", gitlabPushBody("refs/tags/v1"), authGood, "GitLab tag push"},
		{true, "Merge Request Hook", "application/json", []byte(`{"object_kind":"merge_request"}`), authGood, "GitLab, not a push"},
		{true, "Push Hook", "application/json", glPush, authWrong, "GitLab, wrong token"},
		{true, "Push Hook", "text/plain", []byte(`{"ref":1}`), authGood, "GitLab, ref not a string"},
		{false, "", "", nil, authGood, "no event"},
	} {
		p := uint8(0)
		if s.gitlab {
			p = 1
		}
		f.Add(p, s.event, s.ct, s.body, s.mode)
	}
	f.Fuzz(func(t *testing.T, which uint8, event, contentType string, body []byte, mode uint8) {
		if len(body) > 64<<10 && mode&modeSmallBody == 0 {
			t.Skip("the default limit (4 MiB) has tests of its own; large bodies only slow the search")
		}
		p := providers[int(which)%len(providers)]
		limits := Limits{}
		if mode&modeSmallBody != 0 {
			limits.MaxBody = smallBody
		}
		repos := &listingRepos{fakeRepos: fleetOf()}
		h, err := New([]byte(secret), repos, limits, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		request := func() *http.Request { return fuzzRequest(p, event, contentType, body, mode) }
		code, res := serveFuzz(t, h, request())
		maxBody := int64(DefaultMaxBody)
		if limits.MaxBody != 0 {
			maxBody = limits.MaxBody
		}
		// An empty header is no header: the provider is not recognised.
		if event == "" || !validHeaderValue(event) {
			if code != http.StatusBadRequest || repos.listed > 0 {
				t.Fatalf("no event header: %d, listed %d times", code, repos.listed)
			}
			return
		}
		if mode&3 != authGood || int64(len(body)) > maxBody {
			if code < 400 || repos.listed > 0 || len(repos.syncs()) > 0 {
				t.Fatalf("auth mode %d, %d bytes: answered %d, listed %d times, synced %v", mode&3, len(body), code, repos.listed, repos.syncs())
			}
			if int64(len(body)) > maxBody && mode&modeChunked == 0 && code != http.StatusRequestEntityTooLarge {
				t.Fatalf("a declared %d bytes over the %d limit answered %d", len(body), maxBody, code)
			}
			return
		}
		push, isPush, parseErr := p.parse(event, request(), body)
		switch {
		case p.pong[event]:
			if code != http.StatusOK || res.Message != "pong" {
				t.Fatalf("ping answered %d %q", code, res.Message)
			}
			return
		case parseErr != nil:
			if code != http.StatusBadRequest || repos.listed > 0 {
				t.Fatalf("a payload that does not parse (%v) answered %d, listed %d times", parseErr, code, repos.listed)
			}
			return
		case !isPush:
			if code != http.StatusAccepted || repos.listed > 0 {
				t.Fatalf("event %q, not a push, answered %d, listed %d times", event, code, repos.listed)
			}
			return
		}
		checkPushFromBody(t, p, request().Header.Get("Content-Type"), body, push)
		urls := newRepoSet(push.RepoURLs)
		if push.Ref == "" || len(urls) == 0 {
			if code != http.StatusBadRequest || repos.listed > 0 {
				t.Fatalf("a push without ref or URL answered %d, listed %d times", code, repos.listed)
			}
			return
		}
		var want []string
		for _, g := range repos.running {
			if urls.matches(g.Repo) && g.Follows(push.Ref, push.DefaultBranch) {
				want = append(want, g.Key().String())
			}
		}
		sort.Strings(want)
		if code != http.StatusOK || !slices.Equal(res.Synced, want) || !slices.Equal(sortedCopy(repos.syncs()), want) {
			t.Fatalf("push of %q to %v: answered %d, synced %v (signalled %v), want %v", push.Ref, push.RepoURLs, code, res.Synced, repos.syncs(), want)
		}
		if p.name == "github" && len(want) > 0 {
			code, res = serveFuzz(t, h, request())
			if code != http.StatusOK || !res.Duplicate || len(repos.syncs()) != len(want) {
				t.Fatalf("the push replayed: answered %d, duplicate %v, signalled %v", code, res.Duplicate, repos.syncs())
			}
		}
	})
}

// listingRepos counts the listings the handler asks for.
type listingRepos struct {
	*fakeRepos
	listed int
}

func (l *listingRepos) List(ctx context.Context, matches func(string) bool) ([]GitRepo, error) {
	l.listed++
	return l.fakeRepos.List(ctx, matches)
}

// fuzzRequest is one delivery of body as event from provider p, authenticated and sent as mode says.
func fuzzRequest(p provider, event, contentType string, body []byte, mode uint8) *http.Request {
	r := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
	if mode&modeChunked != 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = -1
	}
	if validHeaderValue(contentType) {
		r.Header.Set("Content-Type", contentType)
	}
	if validHeaderValue(event) {
		r.Header.Set(p.eventHeader, event)
	}
	r.Header.Set(p.deliveryHeader, fmt.Sprintf("fuzz-%d", deliveryCount.Add(1)))
	var good, wrong, malformed string
	var header string
	switch p.name {
	case "github":
		header, good, wrong, malformed = githubSignature, sign(secret, body), sign("guess", body), "sha256="+strings.Repeat("z", 64)
	case "gitlab":
		header, good, wrong, malformed = "X-Gitlab-Token", secret, secret+"x", " "
	}
	switch mode & 3 {
	case authGood:
		r.Header.Set(header, good)
	case authWrong:
		r.Header.Set(header, wrong)
	case authMalformed:
		r.Header.Set(header, malformed)
	}
	return r
}

// validHeaderValue is what net/http would send: no control characters.
func validHeaderValue(v string) bool {
	return !strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f })
}

func serveFuzz(t *testing.T, h http.Handler, r *http.Request) (int, Response) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code >= 500 {
		t.Fatalf("answered %d: %s", w.Code, w.Body.String())
	}
	if w.Body.Len() > maxAnswer {
		t.Fatalf("an answer of %d bytes", w.Body.Len())
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("answered as %q", ct)
	}
	var res Response
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("the answer is no Response: %v: %s", err, w.Body.String())
	}
	return w.Code, res
}

// checkPushFromBody checks that the push's ref and URLs are strings of the payload, not made up.
func checkPushFromBody(t *testing.T, p provider, contentType string, body []byte, push Push) {
	t.Helper()
	payload := body
	if ct, _, _ := mime.ParseMediaType(contentType); p.name == "github" && ct == "application/x-www-form-urlencoded" {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			t.Fatalf("parsed a form that does not parse: %v", err)
		}
		payload = []byte(form.Get("payload"))
	}
	strs := map[string]bool{"": true}
	dec := json.NewDecoder(bytes.NewReader(payload))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parsed a payload that is not JSON: %v", err)
		}
		if s, ok := tok.(string); ok {
			strs[s] = true
		}
	}
	for _, s := range append([]string{push.Ref, push.DefaultBranch}, push.RepoURLs...) {
		if !strs[s] {
			t.Fatalf("the push holds %q, which the payload does not", s)
		}
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}
