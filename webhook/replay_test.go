package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestARedeliveredGitHubPushIsAnsweredAsADuplicateWithoutSyncing(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	push := githubPushBody("refs/heads/dev")
	first := githubRequest("push", push, sign(secret, push))
	w, res := serve(h, first)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, []string{"apps-dev"}, res.Synced)

	redelivery := githubRequest("push", push, sign(secret, push))
	redelivery.Header.Set("X-GitHub-Delivery", first.Header.Get("X-GitHub-Delivery"))
	w, res = serve(h, redelivery)
	require.Equal(t, http.StatusOK, w.Code, "a redelivery succeeded: its push was handled")
	require.True(t, res.Duplicate)
	require.Equal(t, []string{}, res.Synced)

	// GitHub does not sign X-GitHub-Delivery: a captured delivery replayed under a fresh GUID is the same push.
	w, res = serve(h, githubRequest("push", push, sign(secret, push)))
	require.Equal(t, http.StatusOK, w.Code)
	require.True(t, res.Duplicate)
	require.Equal(t, []string{"apps-dev"}, repos.syncs(), "synced once")

	// The next push of the same branch is another delivery.
	next := []byte(strings.Replace(string(push), `"after":"abc"`, `"after":"def"`, 1))
	w, res = serve(h, githubRequest("push", next, sign(secret, next)))
	require.Equal(t, http.StatusOK, w.Code)
	require.False(t, res.Duplicate)
	require.Equal(t, []string{"apps-dev", "apps-dev"}, repos.syncs())
}

func gitlabDelivery(body []byte, idempotencyKey, eventUUID string) *http.Request {
	r := gitlabRequest("Push Hook", body, secret)
	if idempotencyKey != "" {
		r.Header.Set("Idempotency-Key", idempotencyKey)
	}
	r.Header.Set("X-Gitlab-Event-UUID", eventUUID)
	return r
}

func TestARetriedGitLabPushIsRecognisedByItsIdempotencyKey(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	push := gitlabPushBody("refs/heads/main")
	_, res := serve(h, gitlabDelivery(push, "k-1", "e-1"))
	require.Equal(t, []string{"gl"}, res.Synced)
	w, res := serve(h, gitlabDelivery(push, "k-1", "e-1"))
	require.Equal(t, http.StatusOK, w.Code)
	require.True(t, res.Duplicate, "a retry keeps its Idempotency-Key")
	require.Equal(t, []string{"gl"}, repos.syncs())

	// GitLab gives every event one hook fires while handling one request the same X-Gitlab-Event-UUID:
	// two pushes sharing it are two deliveries.
	_, res = serve(h, gitlabDelivery(push, "k-2", "e-1"))
	require.False(t, res.Duplicate)
	require.Equal(t, []string{"gl"}, res.Synced)

	// Older GitLab versions send no Idempotency-Key, and nothing to recognise a retry by: it syncs again.
	serve(h, gitlabDelivery(push, "", "e-2"))
	_, res = serve(h, gitlabDelivery(push, "", "e-2"))
	require.False(t, res.Duplicate)
	require.Equal(t, []string{"gl", "gl", "gl", "gl"}, repos.syncs())
}

func TestAFailedDeliverySyncsAgainWhenRedelivered(t *testing.T) {
	repos := fleetOf()
	repos.syncErr = map[string]error{"apps-ssh": errors.New("deadline exceeded")}
	h, _ := newHandler(t, repos)
	push := githubPushBody("refs/heads/main")
	delivery := func() *http.Request {
		r := githubRequest("push", push, sign(secret, push))
		r.Header.Set("X-GitHub-Delivery", "redelivered")
		return r
	}
	w, _ := serve(h, delivery())
	require.Equal(t, http.StatusBadGateway, w.Code)

	repos.syncErr = nil
	w, res := serve(h, delivery())
	require.Equal(t, http.StatusOK, w.Code)
	require.False(t, res.Duplicate, "the first attempt failed: the redelivery is handled")
	require.Equal(t, []string{"apps-head", "apps-main", "apps-ssh"}, res.Synced)

	_, res = serve(h, delivery())
	require.True(t, res.Duplicate, "once handled, it is remembered")
}

func TestADeliveryThatMatchedNothingIsHandledAgainWhenRedelivered(t *testing.T) {
	repos := fleetOf()
	h, _ := newHandler(t, repos)
	push := githubPushBody("refs/heads/feature")
	_, res := serve(h, githubRequest("push", push, sign(secret, push)))
	require.Equal(t, []string{}, res.Synced)

	repos.running = append(repos.running, GitRepo{Name: "apps-feature", Repo: "https://github.com/org/apps", Branch: "feature"})
	_, res = serve(h, githubRequest("push", push, sign(secret, push)))
	require.False(t, res.Duplicate)
	require.Equal(t, []string{"apps-feature"}, res.Synced, "a GitRepo started since follows the pushed branch")
}

func TestARedeliveryRacingItsOriginalIsAConflictAndSyncsNothing(t *testing.T) {
	repos := gate(fleetOf())
	h, _ := newHandler(t, repos)
	push := githubPushBody("refs/heads/dev")
	original := serveAsync(h, githubRequest("push", push, sign(secret, push)))
	repos.waitListing(t, 1)

	w := answer(t, serveAsync(h, githubRequest("push", push, sign(secret, push))))
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())

	close(repos.release)
	require.Equal(t, http.StatusOK, answer(t, original).Code)
	require.Equal(t, []string{"apps-dev"}, repos.syncs())
}

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestHandledDeliveriesAreRememberedForTheWindowOnly(t *testing.T) {
	c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	d := newDeliveries(c.now)
	key := []string{"d-1"}
	require.Equal(t, admitted, d.admit(key))
	require.Equal(t, inProgress, d.admit(key), "held while handled")
	d.done(key, true)

	c.t = c.t.Add(replayWindow - time.Second)
	require.Equal(t, duplicate, d.admit(key))
	c.t = c.t.Add(time.Second)
	require.Equal(t, admitted, d.admit(key), "forgotten after %s", replayWindow)
	d.done(key, false)
	require.Equal(t, 0, d.len(), "a delivery that was not handled is not remembered")
	require.Equal(t, admitted, d.admit(key))
}

func TestTheMemoryOfDeliveriesIsBounded(t *testing.T) {
	c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	d := newDeliveries(c.now)
	for i := 0; i < replayMemory+100; i++ {
		keys := []string{fmt.Sprintf("id-%d", i), fmt.Sprintf("body-%d", i)}
		require.Equal(t, admitted, d.admit(keys))
		d.done(keys, true)
		require.LessOrEqual(t, d.len(), replayMemory)
	}
	require.Equal(t, duplicate, d.admit([]string{fmt.Sprintf("id-%d", replayMemory+99)}), "the newest are remembered")
	require.Equal(t, admitted, d.admit([]string{"id-0"}), "the oldest were forgotten first")
}
