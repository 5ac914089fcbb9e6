package fleet

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func restriction(name string, edit func(*GitRepoRestriction)) GitRepoRestriction {
	r := GitRepoRestriction{Metadata: ObjectMeta{Name: name, Namespace: "team-a"}}
	edit(&r)
	return r
}

func gitRepoOf(repo string, edit func(*GitRepoSpec)) GitRepo {
	gr := GitRepo{Metadata: ObjectMeta{Name: "web", Namespace: "team-a"}, Spec: GitRepoSpec{Repo: repo}}
	if edit != nil {
		edit(&gr.Spec)
	}
	return gr
}

func TestANamespaceWithoutRestrictionsAdmitsEveryGitRepo(t *testing.T) {
	gr := gitRepoOf("https://example.com/anything.git", func(s *GitRepoSpec) { s.ServiceAccount = "deployer" })
	got, err := Admit(gr, nil)
	require.NoError(t, err)
	require.Equal(t, gr, got)
}

func TestRepoPatternsMatchVerbatimOrAsUnanchoredRegularExpressions(t *testing.T) {
	rs := []GitRepoRestriction{restriction("repos", func(r *GitRepoRestriction) {
		r.AllowedRepoPatterns = []string{"https://git.example.com/team-a/", "https://mirror.example.com/exact.git"}
	})}
	for _, repo := range []string{"https://git.example.com/team-a/web.git", "https://mirror.example.com/exact.git"} {
		_, err := Admit(gitRepoOf(repo, nil), rs)
		require.NoError(t, err, repo)
	}
	_, err := Admit(gitRepoOf("https://git.example.com/team-b/web.git", nil), rs)
	require.EqualError(t, err, `disallowed repo https://git.example.com/team-b/web.git: not in allowed set `+
		`[https://git.example.com/team-a/ https://mirror.example.com/exact.git] (GitRepoRestriction "repos")`)

	bad := []GitRepoRestriction{restriction("typo", func(r *GitRepoRestriction) { r.AllowedRepoPatterns = []string{"https://(git"} })}
	_, err = Admit(gitRepoOf("https://git.example.com/x.git", nil), bad)
	require.ErrorContains(t, err, `allowedRepoPatterns "https://(git" is not a regular expression`)
}

func TestRestrictionsMergeInNameOrderAndDefaultsMustBeAllowedToo(t *testing.T) {
	rs := []GitRepoRestriction{
		restriction("b", func(r *GitRepoRestriction) {
			r.DefaultClientSecretName = "b-default"
			r.AllowedClientSecretNames = []string{"b-default", "shared"}
		}),
		restriction("a", func(r *GitRepoRestriction) { r.DefaultClientSecretName = "a-default" }),
	}
	_, err := Admit(gitRepoOf("https://x/y.git", nil), rs)
	require.EqualError(t, err, `disallowed clientSecretName a-default: not in allowed set [b-default shared] (GitRepoRestriction "a", "b")`,
		"the first restriction by name gives the default, and a default outside the allow-list is refused")

	got, err := Admit(gitRepoOf("https://x/y.git", func(s *GitRepoSpec) { s.ClientSecretName = "shared" }), rs)
	require.NoError(t, err)
	require.Equal(t, "shared", got.Spec.ClientSecretName)

	onlyDefault := []GitRepoRestriction{restriction("d", func(r *GitRepoRestriction) { r.DefaultClientSecretName = "team-a-git" })}
	got, err = Admit(gitRepoOf("https://x/y.git", nil), onlyDefault)
	require.NoError(t, err)
	require.Equal(t, "team-a-git", got.Spec.ClientSecretName, "a GitRepo naming no credentials gets the default")
}

func TestAllowedTargetNamespacesRequireOneOfThem(t *testing.T) {
	rs := []GitRepoRestriction{restriction("ns", func(r *GitRepoRestriction) { r.AllowedTargetNamespaces = []string{"team-a-apps"} })}
	_, err := Admit(gitRepoOf("https://x/y.git", nil), rs)
	require.EqualError(t, err, `empty targetNamespace denied, because allowedTargetNamespaces restriction is present (GitRepoRestriction "ns")`)
	_, err = Admit(gitRepoOf("https://x/y.git", func(s *GitRepoSpec) { s.TargetNamespace = "kube-system" }), rs)
	require.EqualError(t, err, `disallowed targetNamespace kube-system: not in allowed set [team-a-apps] (GitRepoRestriction "ns")`)
	_, err = Admit(gitRepoOf("https://x/y.git", func(s *GitRepoSpec) { s.TargetNamespace = "team-a-apps" }), rs)
	require.NoError(t, err)
}

// Flotilla deploys with the cluster's own credentials: a service account the restrictions ask for, or a
// namespace selector it cannot evaluate, refuses the GitRepo instead of being silently ignored.
func TestWhatFlotillaCannotHonourIsRefusedByName(t *testing.T) {
	withDefault := []GitRepoRestriction{restriction("sa", func(r *GitRepoRestriction) { r.DefaultServiceAccount = "limited" })}
	_, err := Admit(gitRepoOf("https://x/y.git", nil), withDefault)
	require.ErrorContains(t, err, `serviceAccount "limited" (GitRepoRestriction "sa"): Flotilla has no service accounts to deploy as`)

	allowedOnly := []GitRepoRestriction{restriction("sa", func(r *GitRepoRestriction) { r.AllowedServiceAccounts = []string{"limited"} })}
	_, err = Admit(gitRepoOf("https://x/y.git", func(s *GitRepoSpec) { s.ServiceAccount = "admin" }), allowedOnly)
	require.EqualError(t, err, `disallowed serviceAccount admin: not in allowed set [limited] (GitRepoRestriction "sa")`)

	selector := []GitRepoRestriction{restriction("sel", func(r *GitRepoRestriction) {
		r.AllowedTargetNamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	})}
	_, err = Admit(gitRepoOf("https://x/y.git", func(s *GitRepoSpec) { s.TargetNamespace = "apps" }), selector)
	require.ErrorContains(t, err, `GitRepoRestriction "sel": allowedTargetNamespaceSelector is not supported`)
}
