package fleet_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
)

func TestARepositoryURLNeverCarriesCredentials(t *testing.T) {
	gitRepo := func(repo string) fleet.GitRepo {
		g := fleet.GitRepo{Spec: fleet.GitRepoSpec{Repo: repo}}
		g.Metadata.Name = "shop"
		return g
	}
	for _, repo := range []string{"https://user:secret@git.example.com/org/repo.git", "https://ghp_TOKEN@github.com/org/repo", "http://token@git.local/repo"} {
		err := fleet.ValidateGitRepo(gitRepo(repo))
		require.Error(t, err, repo)
		require.Contains(t, err.Error(), "clientSecretName")
		require.NotContains(t, err.Error(), "secret@", "the error does not repeat the credential")
		require.NotContains(t, err.Error(), "TOKEN")
	}
	for _, repo := range []string{"https://github.com/org/repo", "ssh://git@github.com/org/repo.git", "git@github.com:org/repo.git", "file:///srv/git/repo"} {
		require.NoError(t, fleet.ValidateGitRepo(gitRepo(repo)), repo)
	}
}

func TestAGitReposCABundleIsPEMCertificates(t *testing.T) {
	g := fleet.GitRepo{Spec: fleet.GitRepoSpec{Repo: "https://git.example.com/org/repo.git"}}
	g.Metadata.Name = "shop"
	g.Spec.CABundle = []byte("not a certificate")
	require.EqualError(t, fleet.ValidateGitRepo(g), `gitrepo "shop": spec.caBundle holds no PEM certificate (base64 of the PEM text, as in Fleet)`)
	g.Spec.CABundle = make([]byte, fleet.MaxCABundle+1)
	require.ErrorContains(t, fleet.ValidateGitRepo(g), `gitrepo "shop": spec.caBundle: 65537 bytes, more than 65536`)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	g.Spec.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	require.NoError(t, fleet.ValidateGitRepo(g))
}

// A helmRepoURLRegex that does not compile is refused when the GitRepo is applied, not found out at the
// first chart fetch.
func TestAGitReposHelmRepoURLRegexMustCompile(t *testing.T) {
	g := fleet.GitRepo{Spec: fleet.GitRepoSpec{Repo: "https://git.example.com/org/repo.git", HelmSecretName: "charts"}}
	g.Metadata.Name = "shop"
	g.Spec.HelmRepoURLRegex = "^https://(charts"
	require.ErrorContains(t, fleet.ValidateGitRepo(g), `gitrepo "shop": spec.helmRepoURLRegex "^https://(charts": error parsing regexp`)
	g.Spec.HelmRepoURLRegex = `^https://charts\.example\.com/`
	require.NoError(t, fleet.ValidateGitRepo(g))
}
