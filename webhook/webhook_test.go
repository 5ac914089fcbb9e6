package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/flotilla-gitops/flotilla/api"
)

const secret = "s3cret-webhook-key"

// fakeRepos stands in for Temporal: a fixed list of running GitRepos and a record of sync signals.
type fakeRepos struct {
	mu      sync.Mutex
	running []GitRepo
	synced  []string
	listErr error
	syncErr map[string]error
}

func (f *fakeRepos) List(_ context.Context, matches func(string) bool) ([]GitRepo, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []GitRepo
	for _, g := range f.running {
		if matches(g.Repo) {
			out = append(out, g)
		}
	}
	return out, nil
}

func (f *fakeRepos) Sync(_ context.Context, key api.GitRepoKey) error {
	name := key.String()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.syncErr[name]; err != nil {
		return err
	}
	f.synced = append(f.synced, name)
	return nil
}

func (f *fakeRepos) syncs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.synced...)
}

func fleetOf() *fakeRepos {
	return &fakeRepos{running: []GitRepo{
		{Name: "apps-main", Repo: "https://github.com/org/apps", Branch: "main"},
		{Name: "apps-ssh", Repo: "git@github.com:org/apps.git", Branch: "main"},
		{Name: "apps-dev", Repo: "https://github.com/org/apps", Branch: "dev"},
		{Name: "apps-head", Repo: "ssh://git@github.com/org/apps"},
		{Name: "apps-v1", Repo: "https://github.com/org/apps", Revision: "v1"},
		{Name: "infra", Repo: "https://github.com/org/infra", Branch: "main"},
		{Name: "gl", Repo: "https://gitlab.example.com/group/apps.git", Branch: "main"},
	}}
}

func newHandler(t *testing.T, repos GitRepos) (*Handler, *observer.ObservedLogs) {
	t.Helper()
	return newLimitedHandler(t, repos, Limits{})
}

func newLimitedHandler(t *testing.T, repos GitRepos, limits Limits) (*Handler, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	h, err := New([]byte(secret), repos, limits, zap.New(core))
	require.NoError(t, err)
	return h, logs
}

func githubPushBody(ref string) []byte {
	return []byte(fmt.Sprintf(`{"ref":%q,"after":"abc","repository":{"name":"apps",
		"clone_url":"https://github.com/org/apps.git","ssh_url":"git@github.com:org/apps.git",
		"html_url":"https://github.com/org/apps","git_url":"git://github.com/org/apps.git","default_branch":"main"}}`, ref))
}

func gitlabPushBody(ref string) []byte {
	return []byte(fmt.Sprintf(`{"object_kind":"push","ref":%q,"checkout_sha":"abc","project":{
		"git_http_url":"https://gitlab.example.com/group/apps.git","git_ssh_url":"git@gitlab.example.com:group/apps.git",
		"web_url":"https://gitlab.example.com/group/apps","default_branch":"main"}}`, ref))
}

func sign(key string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// deliveryCount numbers the requests built here: GitHub gives every delivery its own GUID.
var deliveryCount atomic.Int64

func githubRequest(event string, body []byte, signature string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-GitHub-Event", event)
	r.Header.Set("X-GitHub-Delivery", fmt.Sprintf("d-%d", deliveryCount.Add(1)))
	if signature != "" {
		r.Header.Set("X-Hub-Signature-256", signature)
	}
	return r
}

func gitlabRequest(event string, body []byte, token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Gitlab-Event", event)
	if token != "" {
		r.Header.Set("X-Gitlab-Token", token)
	}
	return r
}

func serve(h http.Handler, r *http.Request) (*httptest.ResponseRecorder, Response) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var res Response
	_ = json.Unmarshal(w.Body.Bytes(), &res)
	return w, res
}

func TestSignedGitHubPushSyncsEveryGitRepoFollowingThatBranchOfThatRepo(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	body := githubPushBody("refs/heads/main")
	w, res := serve(h, githubRequest("push", body, sign(secret, body)))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	require.Equal(t, []string{"apps-head", "apps-main", "apps-ssh"}, res.Synced,
		"main and HEAD (default branch main) of org/apps, however its URL is written; not dev, v1 or other repos")
	require.ElementsMatch(t, res.Synced, repos.syncs())
}

// A push concerns the GitRepos of the repository in every workspace, same-named ones included.
func TestAPushSyncsTheGitReposOfEveryWorkspace(t *testing.T) {
	repos := &fakeRepos{running: []GitRepo{
		{Name: "web", Repo: "https://github.com/org/apps", Branch: "main"},
		{Name: "web", Repo: "https://github.com/org/apps", Branch: "main", Namespace: "team-a"},
		{Name: "web", Repo: "git@github.com:org/apps.git", Branch: "main", Namespace: "team-b"},
		{Name: "web", Repo: "https://github.com/org/apps", Branch: "dev", Namespace: "team-c"},
	}}
	h, _ := newHandler(t, repos)
	body := githubPushBody("refs/heads/main")
	w, res := serve(h, githubRequest("push", body, sign(secret, body)))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, []string{"team-a/web", "team-b/web", "web"}, res.Synced, "fleet-default's by name, the others' with their namespace")
	require.ElementsMatch(t, res.Synced, repos.syncs())
}

func TestGitHubPushOfAnotherBranchOrATagSyncsOnlyWhatFollowsIt(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	body := githubPushBody("refs/heads/dev")
	_, res := serve(h, githubRequest("push", body, sign(secret, body)))
	require.Equal(t, []string{"apps-dev"}, res.Synced)

	body = githubPushBody("refs/tags/v1")
	_, res = serve(h, githubRequest("push", body, sign(secret, body)))
	require.Equal(t, []string{"apps-v1"}, res.Synced)

	body = githubPushBody("refs/heads/feature")
	w, res := serve(h, githubRequest("push", body, sign(secret, body)))
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, []string{}, res.Synced)
	require.Equal(t, []string{"apps-dev", "apps-v1"}, repos.syncs())
}

func TestBadOrMissingGitHubSignatureIsRejectedAndSyncsNothing(t *testing.T) {
	body := githubPushBody("refs/heads/main")
	for name, sig := range map[string]string{
		"missing":       "",
		"wrong secret":  sign("guess", body),
		"other body":    sign(secret, githubPushBody("refs/heads/dev")),
		"sha1 prefix":   strings.Replace(sign(secret, body), "sha256=", "sha1=", 1),
		"not hex":       "sha256=zz",
		"truncated mac": sign(secret, body)[:20],
	} {
		repos := fleetOf()
		h, logs := newHandler(t, repos)
		w, _ := serve(h, githubRequest("push", body, sig))
		require.Equal(t, http.StatusUnauthorized, w.Code, name)
		require.Empty(t, repos.syncs(), name)
		for _, e := range logs.All() {
			require.NotContains(t, fmt.Sprint(e.Message, e.ContextMap()), secret, name)
		}
	}
}

func TestGitHubPingIsAnsweredWhenSignedAndRejectedWhenNot(t *testing.T) {
	h, _ := newHandler(t, fleetOf())
	body := []byte(`{"zen":"Design for failure.","hook_id":1}`)
	w, res := serve(h, githubRequest("ping", body, sign(secret, body)))
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "pong", res.Message)
	w, _ = serve(h, githubRequest("ping", body, sign("wrong", body)))
	require.Equal(t, http.StatusUnauthorized, w.Code, "a ping with the wrong secret tells the user at once")
}

func TestGitHubFormEncodedPushIsUnderstood(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	body := []byte("payload=" + url.QueryEscape(string(githubPushBody("refs/heads/dev"))))
	r := githubRequest("push", body, sign(secret, body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w, res := serve(h, r)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, []string{"apps-dev"}, res.Synced)
}

func TestGitLabPushWithTheRightTokenSyncsAndAWrongTokenIsRejected(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	body := gitlabPushBody("refs/heads/main")
	for name, token := range map[string]string{"missing": "", "wrong": "s3cret-webhook-ke", "longer": secret + "x"} {
		w, _ := serve(h, gitlabRequest("Push Hook", body, token))
		require.Equal(t, http.StatusUnauthorized, w.Code, name)
	}
	require.Empty(t, repos.syncs())

	w, res := serve(h, gitlabRequest("Push Hook", body, secret))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, []string{"gl"}, res.Synced)
}

func TestEventsThatPushNothingAreIgnored(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	body := []byte(`{"action":"opened"}`)
	w, res := serve(h, githubRequest("issues", body, sign(secret, body)))
	require.Equal(t, http.StatusAccepted, w.Code)
	require.Contains(t, res.Message, "ignored")
	w, _ = serve(h, gitlabRequest("Merge Request Hook", body, secret))
	require.Equal(t, http.StatusAccepted, w.Code)
	require.Empty(t, repos.syncs())

	// An ignored event is still authenticated first: nothing is told to a caller without the secret.
	w, _ = serve(h, githubRequest("issues", body, sign("wrong", body)))
	require.Equal(t, http.StatusUnauthorized, w.Code)
}

func TestOnlyPostIsAccepted(t *testing.T) {
	h, _ := newHandler(t, fleetOf())
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodHead} {
		r := httptest.NewRequest(m, Path, nil)
		r.Header.Set("X-GitHub-Event", "push")
		w, _ := serve(h, r)
		require.Equal(t, http.StatusMethodNotAllowed, w.Code, m)
		require.Equal(t, http.MethodPost, w.Header().Get("Allow"))
	}
}

func TestOversizedBodyIsRefusedBeforeAnythingIsSynced(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	body := bytes.Repeat([]byte(" "), DefaultMaxBody+1)
	w, _ := serve(h, githubRequest("push", body, sign(secret, body)))
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	require.Empty(t, repos.syncs())
}

func TestRequestFromNoKnownProviderIsABadRequest(t *testing.T) {
	h, _ := newHandler(t, fleetOf())
	w, _ := serve(h, httptest.NewRequest(http.MethodPost, Path, strings.NewReader("{}")))
	require.Equal(t, http.StatusBadRequest, w.Code)
}

func TestMalformedSignedPushIsABadRequest(t *testing.T) {
	h, _ := newHandler(t, fleetOf())
	for name, body := range map[string][]byte{
		"not JSON": []byte("{"),
		"no ref":   []byte(`{"repository":{"clone_url":"https://github.com/org/apps.git"}}`),
		"no repo":  []byte(`{"ref":"refs/heads/main"}`),
	} {
		w, _ := serve(h, githubRequest("push", body, sign(secret, body)))
		require.Equal(t, http.StatusBadRequest, w.Code, name)
	}
}

func TestListingFailureIs503AndASignalFailureIsReportedForRedelivery(t *testing.T) {
	body := githubPushBody("refs/heads/main")
	repos := fleetOf()
	repos.listErr = errors.New("visibility unavailable")
	h, _ := newHandler(t, repos)
	w, _ := serve(h, githubRequest("push", body, sign(secret, body)))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)

	repos = fleetOf()
	repos.syncErr = map[string]error{
		"apps-ssh":  errors.New("deadline exceeded"),
		"apps-head": fmt.Errorf("gitrepo %q: %w", "apps-head", ErrNotRunning),
	}
	h, _ = newHandler(t, repos)
	w, res := serve(h, githubRequest("push", body, sign(secret, body)))
	require.Equal(t, http.StatusBadGateway, w.Code)
	require.Equal(t, []string{"apps-main"}, res.Synced)
	require.Equal(t, []string{"apps-ssh"}, res.Failed, "a GitRepo that ended meanwhile is no failure")
}

func TestTheSecretIsRequiredAndReadWithoutItsNewline(t *testing.T) {
	_, err := New(nil, fleetOf(), Limits{}, nil)
	require.Error(t, err)

	dir := t.TempDir()
	_, err = ReadSecret("")
	require.ErrorContains(t, err, "--webhook-secret-file")
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	_, err = ReadSecret(empty)
	require.ErrorContains(t, err, "is empty")
	f := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(f, []byte(secret+"\n"), 0o600))
	got, err := ReadSecret(f)
	require.NoError(t, err)
	require.Equal(t, secret, string(got))
	_, err = Listen("127.0.0.1:0", empty, Limits{}, fleetOf(), nil)
	require.Error(t, err, "no server without a secret")
}

func TestServerServesThePathOnLoopbackAndShutsDown(t *testing.T) {
	f := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(f, []byte(secret), 0o600))
	repos := fleetOf()
	s, err := Listen("127.0.0.1:0", f, Limits{}, repos, nil)
	require.NoError(t, err)
	base := "http://" + s.Addr().String()

	body := githubPushBody("refs/heads/dev")
	req, err := http.NewRequest(http.MethodPost, base+Path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", sign(secret, body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []string{"apps-dev"}, repos.syncs())

	resp, err = http.Post(base+"/elsewhere", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	require.NoError(t, s.Shutdown(context.Background()))
	_, err = http.Get(base + Path)
	require.Error(t, err, "nothing listens after shutdown")
}
