package tests

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
	"github.com/flotilla-gitops/flotilla/webhook"
)

// A push event deploys the pushed commit at once, though the GitRepo polls only hourly; an event with a
// wrong signature or token changes nothing, not even a poll.
func TestWebhookPushDeploysAtOnceAndAForgedOneChangesNothing(t *testing.T) {
	t.Parallel()
	const secret = "e2e-webhook-secret"
	secretFile := filepath.Join(t.TempDir(), "webhook-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
	addr := freeLoopbackAddr(t)
	s := harness.Start(t, harness.Options{
		Clusters:   []localk8s.ClusterOptions{{Name: "a"}},
		WorkerArgs: []string{"--webhook-listen", addr, "--webhook-secret-file", secretFile},
	})
	hook := "http://" + addr + webhook.Path
	configMap := func(version string) map[string]string {
		return map[string]string{
			"app/fleet.yaml": "defaultNamespace: app\n",
			"app/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  version: " + version + "\n",
		}
	}
	repo := s.NewRepo(configMap("one"))
	s.AddCluster("a", "a", map[string]string{"env": "dev"}, nil)
	// Hourly polling and resync: from here on only the webhook can bring a new commit.
	s.StartGitRepo(api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "hooked"}, Spec: fleet.GitRepoSpec{
			Repo: repo.URL(), Branch: "main", PollingInterval: "1h", Paths: []string{"app"},
			Targets: []fleet.GitTarget{{ClusterName: "a"}},
		}},
		Flotilla: &api.RunOptions{ResyncInterval: "1h"},
	})
	first := s.WaitStatus("hooked", 2*time.Minute, "Ready", harness.AllReady)
	id := api.GitRepoWorkflowID("hooked")

	// The GitHub ping that confirms a new hook.
	ping := []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)
	code, _ := postHook(t, hook, githubHeaders("ping", sign(secret, ping)), ping)
	require.Equal(t, http.StatusOK, code)

	second := repo.Commit(configMap("two"), "two")
	polls := s.ActivityCount(id, "Poll")
	push := githubPush(repo.URL(), "refs/heads/main")

	// Forged: wrong secret, missing signature, and a genuine signature of another body.
	for name, sig := range map[string]string{
		"wrong secret": sign("guessed", push),
		"no signature": "",
		"other body":   sign(secret, githubPush(repo.URL(), "refs/heads/dev")),
	} {
		code, _ := postHook(t, hook, githubHeaders("push", sig), push)
		require.Equal(t, http.StatusUnauthorized, code, name)
	}
	// Genuine, but for a branch the GitRepo does not follow.
	other := githubPush(repo.URL(), "refs/heads/feature")
	code, res := postHook(t, hook, githubHeaders("push", sign(secret, other)), other)
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, res.Synced)

	require.Never(t, func() bool {
		st, err := s.Status("hooked")
		return err == nil && st.Commit != first.Commit
	}, 5*time.Second, 250*time.Millisecond, "no forged or unrelated event moves the GitRepo")
	require.Equal(t, polls, s.ActivityCount(id, "Poll"), "no forged or unrelated event causes a poll")

	// Genuine GitHub push of main.
	sent := time.Now()
	code, res = postHook(t, hook, githubHeaders("push", sign(secret, push)), push)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []string{"hooked"}, res.Synced)
	s.WaitStatus("hooked", 2*time.Minute, "the pushed commit Ready", func(st api.GitRepoStatus) bool {
		return st.Commit == second && harness.AllReady(st)
	})
	t.Logf("GitHub push to Ready: %s", time.Since(sent).Round(time.Millisecond))
	require.Equal(t, "two", s.ConfigMapData("a", "app", "app")["version"])
	require.Equal(t, polls+1, s.ActivityCount(id, "Poll"), "one push, one poll")

	// GitLab: the token is the secret itself.
	third := repo.Commit(configMap("three"), "three")
	gl := gitlabPush(repo.URL(), "refs/heads/main")
	code, _ = postHook(t, hook, gitlabHeaders("not-the-secret"), gl)
	require.Equal(t, http.StatusUnauthorized, code)
	code, res = postHook(t, hook, gitlabHeaders(secret), gl)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []string{"hooked"}, res.Synced)
	s.WaitStatus("hooked", 2*time.Minute, "the GitLab-pushed commit Ready", func(st api.GitRepoStatus) bool {
		return st.Commit == third && harness.AllReady(st)
	})
	require.Equal(t, "three", s.ConfigMapData("a", "app", "app")["version"])
	require.Equal(t, polls+2, s.ActivityCount(id, "Poll"), "the rejected GitLab event did not poll")
}

// freeLoopbackAddr returns a loopback address that was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// githubPush is a GitHub push payload, its URLs written the ways GitHub writes them.
func githubPush(repoURL, ref string) []byte {
	return []byte(fmt.Sprintf(`{"ref":%q,"before":"0000","after":"1111","repository":{"full_name":"org/hooked",
		"clone_url":%q,"ssh_url":"git@example.invalid:org/hooked.git","html_url":%q,"default_branch":"main"}}`,
		ref, repoURL+".git", repoURL+"/"))
}

func gitlabPush(repoURL, ref string) []byte {
	return []byte(fmt.Sprintf(`{"object_kind":"push","ref":%q,"checkout_sha":"1111","project":{
		"git_http_url":%q,"git_ssh_url":"git@example.invalid:group/hooked.git","web_url":%q,"default_branch":"main"}}`,
		ref, repoURL+".git", repoURL))
}

func githubHeaders(event, signature string) http.Header {
	// Every delivery has its own ID, as GitHub's do: the receiver ignores a delivery it has handled.
	h := http.Header{"Content-Type": {"application/json"}, "X-Github-Event": {event},
		"X-Github-Delivery": {fmt.Sprintf("e2e-%d", time.Now().UnixNano())}}
	if signature != "" {
		h.Set("X-Hub-Signature-256", signature)
	}
	return h
}

func gitlabHeaders(token string) http.Header {
	return http.Header{"Content-Type": {"application/json"}, "X-Gitlab-Event": {"Push Hook"}, "X-Gitlab-Token": {token}}
}

// postHook delivers one event, retrying only while the worker's listener is not up yet.
func postHook(t *testing.T, url string, h http.Header, body []byte) (int, webhook.Response) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	var resp *http.Response
	require.Eventually(t, func() bool {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			t.Logf("request: %v", err)
			return false
		}
		req.Header = h.Clone()
		resp, err = client.Do(req)
		return err == nil
	}, harness.Patience(time.Minute), 100*time.Millisecond, "webhook listening at %s", url)
	defer resp.Body.Close()
	var res webhook.Response
	_ = json.NewDecoder(resp.Body).Decode(&res)
	return resp.StatusCode, res
}
