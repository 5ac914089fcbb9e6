package fleet

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitRepoRestriction narrows what the GitRepos and HelmOps of its namespace may ask for, as Fleet's does:
// its fields sit at the top level, beside metadata, not under a spec.
type GitRepoRestriction struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	// DefaultServiceAccount is the service account of a GitRepo that names none.
	DefaultServiceAccount string `json:"defaultServiceAccount,omitempty"`
	// AllowedServiceAccounts lists the service accounts a GitRepo may name.
	AllowedServiceAccounts []string `json:"allowedServiceAccounts,omitempty"`
	// AllowedRepoPatterns are regular expressions (unanchored, as Fleet's) or verbatim URLs the repo must match.
	AllowedRepoPatterns []string `json:"allowedRepoPatterns,omitempty"`
	// DefaultClientSecretName is the git credentials of a GitRepo that names none.
	DefaultClientSecretName string `json:"defaultClientSecretName,omitempty"`
	// AllowedClientSecretNames lists the git credentials a GitRepo may name.
	AllowedClientSecretNames []string `json:"allowedClientSecretNames,omitempty"`
	// AllowedTargetNamespaces lists the targetNamespace a GitRepo may set; when given, one must be set.
	AllowedTargetNamespaces []string `json:"allowedTargetNamespaces,omitempty"`
	// AllowedTargetNamespaceSelector selects target namespaces by their labels on each cluster; Flotilla
	// refuses every GitRepo under it rather than deploy unchecked (see Admit).
	AllowedTargetNamespaceSelector *metav1.LabelSelector `json:"allowedTargetNamespaceSelector,omitempty"`
}

// Admit applies the restrictions of a GitRepo's namespace to it, as Fleet does: the restrictions are
// merged in name order (the first default wins, allow-lists add up), defaults are filled in first so that
// a default outside an allow-list is refused too, and an empty allow-list allows anything. It returns the
// GitRepo with the defaults set, or an error naming the field, the value and what was allowed.
//
// Flotilla has no service accounts to deploy as (it deploys with the cluster's kubeconfig or agent): a
// GitRepo whose restrictions give it one is refused rather than deployed with more rights than they meant.
// The same holds for allowedTargetNamespaceSelector, which would need each cluster's namespace labels.
func Admit(gr GitRepo, restrictions []GitRepoRestriction) (GitRepo, error) {
	if len(restrictions) == 0 {
		return gr, nil
	}
	rs := slices.Clone(restrictions)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Metadata.Name < rs[j].Metadata.Name })
	var m GitRepoRestriction
	var names []string
	for _, r := range rs {
		names = append(names, r.Metadata.Name)
		if m.DefaultServiceAccount == "" {
			m.DefaultServiceAccount = r.DefaultServiceAccount
		}
		if m.DefaultClientSecretName == "" {
			m.DefaultClientSecretName = r.DefaultClientSecretName
		}
		m.AllowedServiceAccounts = append(m.AllowedServiceAccounts, r.AllowedServiceAccounts...)
		m.AllowedRepoPatterns = append(m.AllowedRepoPatterns, r.AllowedRepoPatterns...)
		m.AllowedClientSecretNames = append(m.AllowedClientSecretNames, r.AllowedClientSecretNames...)
		m.AllowedTargetNamespaces = append(m.AllowedTargetNamespaces, r.AllowedTargetNamespaces...)
		if r.AllowedTargetNamespaceSelector != nil {
			return gr, fmt.Errorf("GitRepoRestriction %q: allowedTargetNamespaceSelector is not supported by Flotilla, which does not read "+
				"namespace labels on the clusters: list the namespaces in allowedTargetNamespaces instead", r.Metadata.Name)
		}
	}
	by := "GitRepoRestriction " + strings.Join(quoted(names), ", ")
	if len(m.AllowedTargetNamespaces) > 0 && gr.Spec.TargetNamespace == "" {
		return gr, fmt.Errorf("empty targetNamespace denied, because allowedTargetNamespaces restriction is present (%s)", by)
	}
	sa := firstSet(gr.Spec.ServiceAccount, m.DefaultServiceAccount)
	secret := firstSet(gr.Spec.ClientSecretName, m.DefaultClientSecretName)
	if err := allowed(gr.Spec.TargetNamespace, m.AllowedTargetNamespaces); err != nil {
		return gr, fmt.Errorf("disallowed targetNamespace %s: %w (%s)", gr.Spec.TargetNamespace, err, by)
	}
	if err := allowed(sa, m.AllowedServiceAccounts); err != nil {
		return gr, fmt.Errorf("disallowed serviceAccount %s: %w (%s)", sa, err, by)
	}
	if err := allowedRepo(gr.Spec.Repo, m.AllowedRepoPatterns); err != nil {
		return gr, fmt.Errorf("disallowed repo %s: %w (%s)", gr.Spec.Repo, err, by)
	}
	if err := allowed(secret, m.AllowedClientSecretNames); err != nil {
		return gr, fmt.Errorf("disallowed clientSecretName %s: %w (%s)", secret, err, by)
	}
	if sa != "" {
		return gr, fmt.Errorf("serviceAccount %q (%s): Flotilla has no service accounts to deploy as; it deploys with the cluster's "+
			"kubeconfig or agent, so a restriction that asks for one is refused rather than ignored", sa, by)
	}
	gr.Spec.ClientSecretName = secret
	return gr, nil
}

func firstSet(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

func allowed(value string, list []string) error {
	if value == "" || len(list) == 0 || slices.Contains(list, value) {
		return nil
	}
	return fmt.Errorf("not in allowed set %v", list)
}

// allowedRepo matches a repo URL as Fleet's GitRepoRestriction does: verbatim, or by an unanchored regular
// expression. A pattern that does not compile is named, and allows nothing.
func allowedRepo(repo string, patterns []string) error {
	if repo == "" || len(patterns) == 0 {
		return nil
	}
	for _, p := range patterns {
		if p == repo {
			return nil
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("allowedRepoPatterns %q is not a regular expression: %v", p, err)
		}
		if re.MatchString(repo) {
			return nil
		}
	}
	return fmt.Errorf("not in allowed set %v", patterns)
}
