package main

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"
)

// A GitRepo's serviceAccount asks for less than the cluster's own identity: silently applying with the
// cluster's identity would drop that restriction, so apply refuses it by name before anything starts.
func TestApplyRefusesAGitReposServiceAccount(t *testing.T) {
	_, err := parseDocuments("repo.yaml", []byte(`apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepo
metadata: {name: web}
spec:
  repo: https://example.com/web.git
  serviceAccount: deployer
`))
	require.ErrorContains(t, err, `repo.yaml: document 1 (GitRepo "web"): spec.serviceAccount "deployer": impersonating a service account is not supported yet`)

	docs, err := parseDocuments("repo.yaml", []byte("kind: GitRepo\nmetadata: {name: web}\nspec: {repo: https://example.com/web.git}\n"))
	require.NoError(t, err)
	require.Len(t, docs, 1)
}

// A GitRepo key Flotilla does not know (Fleet's helmSecretNameForPaths, say) is an error naming the key, not silence.
func TestApplyRefusesUnknownGitRepoKeysByName(t *testing.T) {
	_, err := parseDocuments("repo.yaml", []byte("kind: GitRepo\nmetadata: {name: web}\nspec: {repo: https://example.com/web.git, helmSecretNameForPaths: s}\n"))
	require.ErrorContains(t, err, `(GitRepo "web"): error unmarshaling JSON: while decoding JSON: json: unknown field "helmSecretNameForPaths"`)
}

// caBundle is Fleet's: the PEM text, base64-encoded in the YAML; insecureSkipTLSVerify is a bool.
func TestApplyReadsTheGitReposTLSSettingsAsFleetWritesThem(t *testing.T) {
	const pemText = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	docs, err := parseDocuments("repo.yaml", []byte("kind: GitRepo\nmetadata: {name: web}\nspec:\n  repo: https://git.example.com/web.git\n"+
		"  caBundle: "+base64.StdEncoding.EncodeToString([]byte(pemText))+"\n  insecureSkipTLSVerify: true\n"))
	require.NoError(t, err)
	require.Equal(t, pemText, string(docs[0].gitRepo.Spec.CABundle))
	require.True(t, docs[0].gitRepo.Spec.InsecureSkipTLSVerify)

	_, err = parseDocuments("repo.yaml", []byte("kind: GitRepo\nmetadata: {name: web}\nspec: {repo: https://git.example.com/web.git, caBundle: '-----BEGIN'}\n"))
	require.ErrorContains(t, err, `repo.yaml: document 1 (GitRepo "web")`, "PEM text where base64 belongs is refused")
}
