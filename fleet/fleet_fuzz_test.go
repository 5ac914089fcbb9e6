package fleet

import (
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"sigs.k8s.io/yaml"
)

// repoURLParts are every Part a RepoURLError may name besides the scheme one: an error can carry nothing
// of the URL but its scheme.
var (
	repoURLParts = []string{
		"a password in the URL's user part",
		"a user part in an HTTP(S) URL (where tokens go)",
		"a query string ('?'; git needs none)",
		"a fragment ('#'; git needs none)",
	}
	schemePart = regexp.MustCompile(`^a user part in a [a-z][a-z0-9+.-]*:// URL \(only SSH takes one\)$`)
)

// FuzzCheckRepoURL checks CheckRepoURL against go-git, which the worker clones with: what it accepts,
// go-git reads without a password, with a user only over SSH, and with no query or fragment; what it
// refuses, its error names by a fixed part, never by the URL.
func FuzzCheckRepoURL(f *testing.F) {
	for _, s := range []string{
		"https://github.com/org/repo", "https://github.com/org/repo.git", "http://git.local:3000/org/repo.git",
		"ssh://git@github.com/org/repo.git", "ssh://git@github.com:2222/org/repo.git", "git+ssh://git@host/org/repo",
		"git@github.com:org/repo.git", "github.com:org/repo.git", "git://git.example.com/org/repo.git",
		"file:///srv/git/repo", "/srv/git/repo", "./repo", "../repos/web",
		"https://user:SECRET@git.example.com/org/repo.git", "https://SECRET@git.example.com/org/repo.git",
		"user:SECRET@git.example.com:org/repo.git", "user:SE@CRET@git.example.com:org/repo.git",
		"https://git.example.com/org/repo.git?private_token=SECRET", "/srv/git/repo#SECRET",
		"https://user:SE%zzCRET@git.example.com/org/repo.git", "file://SECRET@/srv/git/repo",
		"user:SECRET@git.example.com:org/mirror://x", "", ":", "://", "a:b@c",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, repo string) {
		err := CheckRepoURL(repo)
		if again := CheckRepoURL(repo); (err == nil) != (again == nil) || err != nil && err.Error() != again.Error() {
			t.Fatalf("%q: not deterministic: %v, then %v", repo, err, again)
		}
		if err != nil {
			var part *RepoURLError
			switch {
			case errors.Is(err, errNotAURL):
			case errors.As(err, &part):
				if !slices.Contains(repoURLParts, part.Part) && !schemePart.MatchString(part.Part) {
					t.Fatalf("%q: the error names an unexpected part: %q", repo, part.Part)
				}
			default:
				t.Fatalf("%q: an error of another kind may repeat the URL: %T %v", repo, err, err)
			}
			return
		}
		if strings.ContainsAny(repo, "?#") {
			t.Fatalf("%q: accepted with a query string or a fragment", repo)
		}
		ep, perr := transport.NewEndpoint(repo)
		if perr != nil {
			return // go-git cannot use it: nothing reaches a server
		}
		if ep.Password != "" {
			t.Fatalf("%q: accepted, and go-git reads the password %q from it", repo, ep.Password)
		}
		if ep.User != "" {
			switch ep.Protocol {
			case "ssh", "git+ssh", "ssh+git":
			default:
				t.Fatalf("%q: accepted, and go-git sends the user %q over %s", repo, ep.User, ep.Protocol)
			}
			if strings.Contains(ep.User, ":") {
				t.Fatalf("%q: accepted, and go-git's SSH user %q holds a password", repo, ep.User)
			}
		}
	})
}

// FuzzValidateGitRepo decodes a GitRepo as `flotilla apply` and the workflows receive it and checks that
// the strict check implies the legacy one and everything the strict one promises, and that every error
// names the field it refuses.
func FuzzValidateGitRepo(f *testing.F) {
	for _, s := range []string{
		"metadata: {name: web}\nspec: {repo: https://git.example.com/web.git}\n",
		"metadata: {name: web}\nspec:\n  repo: git@github.com:org/web.git\n  branch: main\n  paths: [apps/*]\n  pollingInterval: 1m\n" +
			"  helmRepoURLRegex: '^https://charts\\.example\\.com/'\n  syncWindows:\n  - {kind: allow, schedule: '0 22 * * 1-5', duration: 8h}\n",
		"metadata: {name: web}\nspec: {repo: 'https://user:SECRET@git.example.com/web.git'}\n",
		"metadata: {name: web}\nspec: {repo: 'user:SECRET@git.example.com:org/web.git'}\n",
		"metadata: {name: Web}\nspec: {repo: https://git.example.com/web.git}\n",
		"metadata: {name: web}\nspec: {repo: ''}\n",
		"metadata: {name: web}\nspec: {repo: 'helmop:web', helmOp: {helm: {chart: nginx}}}\n",
		"metadata: {name: web}\nspec: {repo: https://x/y.git, caBundle: bm90IHBlbQ==}\n",
		"metadata: {name: web}\nspec: {repo: https://x/y.git, helmRepoURLRegex: '(['}\n",
		"metadata: {name: web}\nspec: {repo: https://x/y.git, pollingInterval: -1s}\n",
		"metadata: {name: web}\nspec: {repo: https://x/y.git, syncWindows: [{kind: deny, schedule: 'CRON_TZ=UTC 0 0 * * 6', duration: 48h}]}\n",
		"metadata: {name: web}\nspec: {repo: https://x/y.git, syncWindows: [{kind: deny, schedule: 'TZ=UTC', duration: 1h}]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var g GitRepo
		if yaml.Unmarshal(data, &g) != nil {
			return
		}
		err := ValidateGitRepo(g)
		legacy := ValidateGitRepoLegacyURL(g)
		if again := ValidateGitRepo(g); (err == nil) != (again == nil) {
			t.Fatalf("not deterministic: %v, then %v", err, again)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "metadata.name") && !strings.Contains(err.Error(), "spec.") {
				t.Fatalf("the error names no field: %v", err)
			}
			var part *RepoURLError
			if (errors.As(err, &part) || errors.Is(err, errNotAURL)) && len(g.Spec.Repo) >= 12 && strings.Contains(err.Error(), g.Spec.Repo) {
				t.Fatalf("the error repeats the refused URL: %v", err)
			}
			return
		}
		if legacy != nil {
			t.Fatalf("the strict check accepts what the legacy one refuses: %v", legacy)
		}
		switch s := g.Spec; {
		case !gitRepoName.MatchString(g.Metadata.Name) || len(g.Metadata.Name) > 63:
			t.Fatalf("accepted the name %q", g.Metadata.Name)
		case s.Repo == "":
			t.Fatal("accepted without spec.repo")
		case s.HelmOp == nil && CheckRepoURL(s.Repo) != nil:
			t.Fatalf("accepted the repo URL CheckRepoURL refuses: %v", CheckRepoURL(s.Repo))
		case len(s.CABundle) > MaxCABundle:
			t.Fatalf("accepted a caBundle of %d bytes", len(s.CABundle))
		case ValidateSyncWindows(s.SyncWindows) != nil:
			t.Fatalf("accepted sync windows ValidateSyncWindows refuses: %v", ValidateSyncWindows(s.SyncWindows))
		}
	})
}

// admitInput is a GitRepo and the restrictions of its namespace, as the controller reads them.
type admitInput struct {
	GitRepo      GitRepo              `json:"gitRepo"`
	Restrictions []GitRepoRestriction `json:"restrictions"`
}

// FuzzAdmit checks Fleet's GitRepoRestriction semantics: what is admitted is the GitRepo with at most its
// clientSecretName defaulted, and within every allow-list; the result does not depend on the order the
// restrictions are listed in (each has its own name); the restrictions are left as they were; every
// refusal names the restrictions.
func FuzzAdmit(f *testing.F) {
	for _, s := range []string{
		"gitRepo: {metadata: {name: web}, spec: {repo: https://git.example.com/team-a/web.git}}\n" +
			"restrictions:\n- metadata: {name: repos}\n  allowedRepoPatterns: ['https://git.example.com/team-a/', 'https://mirror.example.com/exact.git']\n",
		"gitRepo: {metadata: {name: web}, spec: {repo: https://x/y.git}}\nrestrictions:\n" +
			"- {metadata: {name: b}, defaultClientSecretName: b-default, allowedClientSecretNames: [b-default, shared]}\n" +
			"- {metadata: {name: a}, defaultClientSecretName: a-default}\n",
		"gitRepo: {metadata: {name: web}, spec: {repo: https://x/y.git, clientSecretName: shared, targetNamespace: web}}\nrestrictions:\n" +
			"- {metadata: {name: b}, allowedClientSecretNames: [shared], allowedTargetNamespaces: [web, api]}\n",
		"gitRepo: {metadata: {name: web}, spec: {repo: https://x/y.git}}\nrestrictions:\n- {metadata: {name: ns}, allowedTargetNamespaces: [web]}\n",
		"gitRepo: {metadata: {name: web}, spec: {repo: https://x/y.git}}\nrestrictions:\n- {metadata: {name: sa}, defaultServiceAccount: deployer}\n",
		"gitRepo: {metadata: {name: web}, spec: {repo: https://x/y.git}}\nrestrictions:\n- {metadata: {name: sel}, allowedTargetNamespaceSelector: {matchLabels: {a: b}}}\n",
		"gitRepo: {metadata: {name: web}, spec: {repo: https://x/y.git}}\nrestrictions:\n- {metadata: {name: typo}, allowedRepoPatterns: ['https://(git']}\n",
		"gitRepo: {metadata: {name: web}, spec: {repo: https://x/y.git}}\nrestrictions: []\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var in admitInput
		if yaml.Unmarshal(data, &in) != nil {
			return
		}
		if len(in.Restrictions) > 16 {
			t.Skip("a namespace holds a few restrictions")
		}
		before := roundTrip(t, in.Restrictions)
		got, err := Admit(in.GitRepo, in.Restrictions)
		if !reflect.DeepEqual(before, roundTrip(t, in.Restrictions)) {
			t.Fatal("Admit changed the restrictions it was given")
		}
		if len(in.Restrictions) == 0 {
			if err != nil || !reflect.DeepEqual(got, in.GitRepo) {
				t.Fatalf("without restrictions: %v, or a changed GitRepo", err)
			}
			return
		}
		names := map[string]bool{}
		for _, r := range in.Restrictions {
			names[r.Metadata.Name] = true
		}
		if len(names) == len(in.Restrictions) {
			reversed := slices.Clone(in.Restrictions)
			slices.Reverse(reversed)
			got2, err2 := Admit(in.GitRepo, reversed)
			if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() || !reflect.DeepEqual(got, got2) {
				t.Fatalf("the order of the restrictions matters: %v / %v", err, err2)
			}
		}
		if err != nil {
			if !strings.Contains(err.Error(), "GitRepoRestriction") {
				t.Fatalf("the refusal names no restriction: %v", err)
			}
			return
		}
		want := in.GitRepo
		want.Spec.ClientSecretName = got.Spec.ClientSecretName
		if !reflect.DeepEqual(got, want) {
			t.Fatal("Admit changed more than clientSecretName")
		}
		if in.GitRepo.Spec.ClientSecretName != "" && got.Spec.ClientSecretName != in.GitRepo.Spec.ClientSecretName {
			t.Fatalf("clientSecretName %q replaced by %q", in.GitRepo.Spec.ClientSecretName, got.Spec.ClientSecretName)
		}
		var repoPatterns, secrets, namespaces []string
		for _, r := range in.Restrictions {
			if r.AllowedTargetNamespaceSelector != nil || r.DefaultServiceAccount != "" {
				t.Fatalf("admitted under restriction %q, which gives a service account or a namespace selector", r.Metadata.Name)
			}
			repoPatterns = append(repoPatterns, r.AllowedRepoPatterns...)
			secrets = append(secrets, r.AllowedClientSecretNames...)
			namespaces = append(namespaces, r.AllowedTargetNamespaces...)
		}
		s := got.Spec
		if s.ServiceAccount != "" {
			t.Fatalf("admitted with serviceAccount %q", s.ServiceAccount)
		}
		if len(namespaces) > 0 && !slices.Contains(namespaces, s.TargetNamespace) {
			t.Fatalf("admitted targetNamespace %q outside %v", s.TargetNamespace, namespaces)
		}
		if len(secrets) > 0 && s.ClientSecretName != "" && !slices.Contains(secrets, s.ClientSecretName) {
			t.Fatalf("admitted clientSecretName %q outside %v", s.ClientSecretName, secrets)
		}
		if len(repoPatterns) > 0 && s.Repo != "" && !slices.ContainsFunc(repoPatterns, func(p string) bool {
			re, err := regexp.Compile(p)
			return p == s.Repo || err == nil && re.MatchString(s.Repo)
		}) {
			t.Fatalf("admitted repo %q, which no pattern of %q allows", s.Repo, repoPatterns)
		}
	})
}

func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzSyncWindows decodes a GitRepo's syncWindows and checks WindowsAt against its definition, minute by
// minute: a window is active when it started less than its duration ago; a deny window that is active
// closes, and allow windows, when there are any, open only while one is. Change is the next moment that
// flips, within a year, and nothing flips before it.
func FuzzSyncWindows(f *testing.F) {
	for _, s := range []struct {
		yaml string
		at   int64
	}{
		{"- {kind: allow, schedule: '0 22 * * *', duration: 8h}\n", 1795608000}, // 2026-11-25 12:00
		{"- {kind: allow, schedule: '0 22 * * *', duration: 8h}\n- {kind: deny, schedule: '0 0 * * 6', duration: 48h}\n", 1795906800},
		{"- {kind: deny, schedule: '0 0 * * 6', duration: 48h, correctDrift: true}\n", 1795608000},
		{"- {kind: deny, schedule: '*/15 9-17 * * 1-5', duration: 5m, clusterName: prod}\n", 1795608000},
		{"- {kind: allow, schedule: '@daily', duration: 1h}\n- {kind: deny, schedule: '@every 90m', duration: 1h}\n", 1795608000},
		{"- {kind: deny, schedule: '0 0 30 2 *', duration: 1h}\n", 1795608000}, // February 30th never comes
		{"- {kind: allow, schedule: '0 0 29 2 1', duration: 6h}\n", 1795608000},
		{"- {kind: deny, schedule: 'CRON_TZ=UTC 0 0 * * 6', duration: 1h}\n", 1795608000},
		{"- {kind: maybe, schedule: 'at noon', duration: forever}\n", 0},
		{"- {kind: allow, schedule: '* * * * *', duration: 1ns}\n", 1795608000},
	} {
		f.Add([]byte(s.yaml), s.at)
	}
	const from, years = 946684800, 100 // 2000-01-01, and the century after it
	f.Fuzz(func(t *testing.T, data []byte, at int64) {
		var ws []SyncWindow
		if yaml.Unmarshal(data, &ws) != nil || len(ws) > 4 {
			return
		}
		now := time.Unix(from+mod(at, years*365*24*3600), 0).UTC()
		verr := ValidateSyncWindows(ws)
		if verr != nil && !regexp.MustCompile(`^spec\.syncWindows\[\d+\]: `).MatchString(verr.Error()) {
			t.Fatalf("the error does not name the window: %v", verr)
		}
		st := WindowsAt(ws, now)
		if again := WindowsAt(ws, now); again != st {
			t.Fatalf("not pure: %+v, then %+v", st, again)
		}
		drift := slices.ContainsFunc(ws, func(w SyncWindow) bool { return w.CorrectDrift })
		if st.CorrectDrift != drift {
			t.Fatalf("CorrectDrift %v, want %v", st.CorrectDrift, drift)
		}
		if want, ok := openByDefinition(ws, now); ok && st.Open != want {
			t.Fatalf("%s: open %v, by the definition %v", now, st.Open, want)
		}
		if st.Change.IsZero() {
			return
		}
		if !st.Change.After(now) || st.Change.Sub(now) > 366*24*time.Hour {
			t.Fatalf("%s: change at %s, not within the year after", now, st.Change)
		}
		if WindowsAt(ws, st.Change).Open == st.Open {
			t.Fatalf("%s: open %v, still at the change %s", now, st.Open, st.Change)
		}
		for _, u := range []time.Time{now.Add(st.Change.Sub(now) / 2), st.Change.Add(-time.Nanosecond)} {
			if u.After(now) && WindowsAt(ws, u).Open != st.Open {
				t.Fatalf("%s: open %v, but it flips at %s, before the change %s", now, st.Open, u, st.Change)
			}
		}
	})
}

func mod(a, n int64) int64 { return (a%n + n) % n }

// openByDefinition decides windows minute by minute, for schedules that start on whole minutes and
// durations short enough to scan; ok is false when it cannot.
func openByDefinition(ws []SyncWindow, now time.Time) (open, ok bool) {
	anyAllow, allowed := false, false
	for _, w := range ws {
		s, d, err := w.parse()
		if err != nil {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(w.Schedule), "@every") || d > 6*time.Hour {
			return false, false
		}
		active := false
		// Starts fall on whole minutes: those in (now-d, now].
		for m := now.Truncate(time.Minute); m.After(now.Add(-d)); m = m.Add(-time.Minute) {
			if s.Next(m.Add(-time.Nanosecond)).Equal(m) {
				active = true
				break
			}
		}
		if w.Kind == WindowDeny && active {
			return false, true
		}
		if w.Kind == WindowAllow {
			anyAllow, allowed = true, allowed || active
		}
	}
	return !anyAllow || allowed, true
}
