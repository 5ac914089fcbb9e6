package credentials

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/crypto/ssh"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/gitserver"
)

const (
	password  = "s3cr3t-pa55word"
	knownHost = "git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
)

func sshKey(t *testing.T) string {
	key, _, err := gitserver.NewKey()
	require.NoError(t, err)
	return string(key)
}

func caPEM(t *testing.T) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now(),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func writeFile(t *testing.T, secrets any) string {
	data, err := yaml.Marshal(secrets)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "credentials.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// writeFolder lays secrets out as Kubernetes mounts a Secret volume: each key a link into a hidden
// timestamped folder, through ..data.
func writeFolder(t *testing.T, secrets map[string]map[string]string) string {
	dir := t.TempDir()
	for name, keys := range secrets {
		sdir := filepath.Join(dir, name)
		data := filepath.Join(sdir, "..2026_01_01_00_00_00.000000001")
		require.NoError(t, os.MkdirAll(data, 0o755))
		require.NoError(t, os.Symlink(filepath.Base(data), filepath.Join(sdir, "..data")))
		for k, v := range keys {
			require.NoError(t, os.WriteFile(filepath.Join(data, k), []byte(v), 0o600))
			require.NoError(t, os.Symlink(filepath.Join("..data", k), filepath.Join(sdir, k)))
		}
	}
	return dir
}

func TestLoadTheFileForm(t *testing.T) {
	key, ca := sshKey(t), caPEM(t)
	path := writeFile(t, map[string]map[string]any{
		"https": {"username": "flotilla", "password": password + "\n"},
		"token": {"password": password},
		"ssh":   {"sshPrivateKey": key, "knownHosts": knownHost},
		"loose": {"sshPrivateKey": key, "insecureIgnoreHostKey": true},
		"helm":  {"username": "u", "password": password, "caBundle": ca, "insecureSkipTLSVerify": true},
	})
	store, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, []string{"helm", "https", "loose", "ssh", "token"}, store.Names())
	require.Equal(t, path, store.Source())

	got, err := store.For("", "https", "https://git.example/")
	require.NoError(t, err)
	require.Equal(t, &Secret{Username: []byte("flotilla"), Password: []byte(password)}, got, "a trailing line break is dropped")
	got, err = store.For("", "ssh", "https://git.example/")
	require.NoError(t, err)
	require.Equal(t, &Secret{SSHPrivateKey: []byte(key), KnownHosts: []byte(knownHost)}, got)
	got, err = store.For("", "helm", "https://git.example/")
	require.NoError(t, err)
	require.Equal(t, &Secret{Username: []byte("u"), Password: []byte(password), CABundle: []byte(ca), InsecureSkipTLSVerify: true}, got)
	got, err = store.For("", "loose", "https://git.example/")
	require.NoError(t, err)
	require.True(t, got.InsecureIgnoreHostKey)

	got.Password = []byte("changed")
	again, err := store.For("", "helm", "https://git.example/")
	require.NoError(t, err)
	require.Equal(t, password, string(again.Password), "Get hands out a copy")
}

// The --git-credentials file of earlier releases loads unchanged, its keys in any case.
func TestLoadTheGitCredentialsFileOfEarlierReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "git.yaml")
	require.NoError(t, os.WriteFile(path, []byte("gitlab: {username: bot, password: tok}\ngithub:\n  Username: me\n  Password: pat\n"), 0o600))
	store, err := Load(path)
	require.NoError(t, err)
	got, err := store.For("", "github", "https://git.example/")
	require.NoError(t, err)
	require.Equal(t, &Secret{Username: []byte("me"), Password: []byte("pat")}, got)

	legacy, err := LoadFlags("", path)
	require.NoError(t, err)
	require.Equal(t, []string{"github", "gitlab"}, legacy.Names())
}

func TestLoadTheFolderFormWithFleetsKeyNames(t *testing.T) {
	key, ca := sshKey(t), caPEM(t)
	dir := writeFolder(t, map[string]map[string]string{
		"basic": {"username": "flotilla\n", "password": password},
		"ssh":   {"ssh-privatekey": key, "known_hosts": knownHost},
		"helm":  {"username": "u", "password": password, "cacerts": ca, "insecureSkipVerify": "true\n"},
		"loose": {"ssh-privatekey": key, "insecureIgnoreHostKey": "true"},
	})
	store, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"basic", "helm", "loose", "ssh"}, store.Names())
	got, err := store.For("", "basic", "https://git.example/")
	require.NoError(t, err)
	require.Equal(t, &Secret{Username: []byte("flotilla"), Password: []byte(password)}, got)
	got, err = store.For("", "ssh", "https://git.example/")
	require.NoError(t, err)
	require.Equal(t, &Secret{SSHPrivateKey: []byte(key), KnownHosts: []byte(knownHost)}, got)
	got, err = store.For("", "helm", "https://git.example/")
	require.NoError(t, err)
	require.Equal(t, &Secret{Username: []byte("u"), Password: []byte(password), CABundle: []byte(ca), InsecureSkipTLSVerify: true}, got)
	got, err = store.For("", "loose", "https://git.example/")
	require.NoError(t, err)
	require.True(t, got.InsecureIgnoreHostKey)
}

func TestGetOfAnUnknownNameAndOfANilStore(t *testing.T) {
	path := writeFile(t, map[string]map[string]any{"git": {"password": password}})
	store, err := Load(path)
	require.NoError(t, err)
	_, err = store.For("", "nope", "https://git.example/")
	require.EqualError(t, err, `secret "nope" is not in the worker's credentials (loaded from `+path+`)`)
	var unknown *UnknownSecretError
	require.ErrorAs(t, err, &unknown)

	var none *Store
	_, err = none.For("", "git", "https://git.example/")
	require.EqualError(t, err, `secret "git": the worker has no credentials configured (--credentials)`)
	require.ErrorIs(t, err, ErrNoCredentials)
	require.Empty(t, none.Names())

	none, err = LoadFlags("", "")
	require.NoError(t, err)
	require.Nil(t, none, "no flag, no store")
}

// Every load error names the file or folder, the secret and the key, and never a value.
func TestLoadErrorsNameWhereAndNeverWhat(t *testing.T) {
	const leak = "l3ak-me-not-value"
	key := sshKey(t)
	for _, tc := range []struct {
		name    string
		secrets map[string]any
		want    string
	}{
		{"unknown key", map[string]any{"web": map[string]any{"pasword": leak}}, `secret "web": key pasword: unknown key`},
		{"not a string", map[string]any{"web": map[string]any{"password": 12345}}, `secret "web": key password: not a string (quote it)`},
		{"not a bool", map[string]any{"web": map[string]any{"password": leak, "insecureSkipTLSVerify": leak}}, `secret "web": key insecureSkipTLSVerify: not true or false`},
		{"not a map", map[string]any{"web": leak}, `secret "web": not a map of keys`},
		{"empty", map[string]any{"web": map[string]any{}}, `secret "web": has no keys`},
		{"username alone", map[string]any{"web": map[string]any{"username": leak}}, `secret "web": key username: set without password`},
		{"bad key", map[string]any{"web": map[string]any{"sshPrivateKey": leak}}, `secret "web": key sshPrivateKey: not a private key SSH can read`},
		{"bad known_hosts", map[string]any{"web": map[string]any{"sshPrivateKey": key, "knownHosts": knownHost + "\n# comment\n" + leak + "\n"}},
			`secret "web": key knownHosts: line 4 is not a known_hosts entry`},
		{"both host key settings", map[string]any{"web": map[string]any{"sshPrivateKey": key, "knownHosts": knownHost, "insecureIgnoreHostKey": true}},
			`secret "web": key insecureIgnoreHostKey: set with knownHosts: give one`},
		{"bad CA", map[string]any{"web": map[string]any{"password": "p", "caBundle": leak}}, `secret "web": key caBundle: holds no PEM certificate`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.secrets)
			_, err := Load(path)
			require.ErrorContains(t, err, "credentials file "+path+": "+tc.want)
			require.NotContains(t, err.Error(), leak)
		})
	}

	t.Run("not YAML", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c.yaml")
		require.NoError(t, os.WriteFile(path, []byte("web:\n  password: "+leak+"\n \tusername: [\n"), 0o600))
		_, err := Load(path)
		require.ErrorContains(t, err, "credentials file "+path+": not valid YAML (line 3)")
		require.NotContains(t, err.Error(), leak)
	})

	for _, tc := range []struct {
		name string
		keys map[string]string
		want string
	}{
		{"unknown key", map[string]string{"ssh-publickey": leak}, `secret "web": key ssh-publickey: unknown key (known: username, password, ssh-privatekey, known_hosts, cacerts, insecureSkipVerify, insecureIgnoreHostKey, workspaces, urlPrefixes)`},
		{"bad key", map[string]string{"ssh-privatekey": leak}, `secret "web": key ssh-privatekey: not a private key SSH can read`},
		{"not a bool", map[string]string{"password": "p", "insecureSkipVerify": leak}, `secret "web": key insecureSkipVerify: not true or false`},
		{"username alone", map[string]string{"username": leak}, `secret "web": key username: set without password`},
		{"bad CA", map[string]string{"password": "p", "cacerts": leak}, `secret "web": key cacerts: holds no PEM certificate`},
	} {
		t.Run("folder "+tc.name, func(t *testing.T) {
			dir := writeFolder(t, map[string]map[string]string{"web": tc.keys})
			_, err := Load(dir)
			require.ErrorContains(t, err, "credentials folder "+dir+": "+tc.want)
			require.NotContains(t, err.Error(), leak)
		})
	}

	t.Run("folder holding a file", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "password"), []byte(leak), 0o600))
		_, err := Load(dir)
		require.ErrorContains(t, err, "credentials folder "+dir+": password is not a folder")
		require.NotContains(t, err.Error(), leak)
	})
}

func TestLoadFlags(t *testing.T) {
	file := writeFile(t, map[string]map[string]any{"git": {"password": password}})
	dir := writeFolder(t, map[string]map[string]string{"git": {"password": password}})
	store, err := LoadFlags(dir, "")
	require.NoError(t, err)
	require.Equal(t, dir, store.Source())
	store, err = LoadFlags(file, file)
	require.NoError(t, err)
	require.Equal(t, file, store.Source())
	_, err = LoadFlags(dir, "")
	require.NoError(t, err)
	_, err = LoadFlags(file, dir)
	require.ErrorContains(t, err, "--credentials and --git-credentials (or FLOTILLA_CREDENTIALS and FLOTILLA_GIT_CREDENTIALS) name different paths")
	_, err = LoadFlags("", dir)
	require.ErrorContains(t, err, "--git-credentials "+dir+": a folder; --git-credentials takes a file, --credentials takes both")
	_, err = LoadFlags(filepath.Join(dir, "missing"), "")
	require.ErrorContains(t, err, "credentials: stat "+filepath.Join(dir, "missing"))
}

// However a secret is printed, logged or encoded, no value shows.
func TestASecretNeverPrintsItsValues(t *testing.T) {
	key := sshKey(t)
	sec := Secret{Username: []byte("us3r-name-value"), Password: []byte(password), SSHPrivateKey: []byte(key),
		KnownHosts: []byte(knownHost), CABundle: []byte("ca-bundle-value"), InsecureSkipTLSVerify: true}
	path := writeFile(t, map[string]map[string]any{"git": {"username": "us3r-name-value", "password": password, "sshPrivateKey": key}})
	store, err := Load(path)
	require.NoError(t, err)
	inside := struct {
		S   Secret
		P   *Secret
		Map map[string]*Secret
	}{sec, &sec, map[string]*Secret{"git": &sec}}

	var out []string
	for _, v := range []any{sec, &sec, inside, store, *store, []*Secret{&sec}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
			out = append(out, fmt.Sprintf(verb, v))
		}
		js, err := json.Marshal(v)
		if err == nil {
			out = append(out, string(js))
		}
	}
	out = append(out, fmt.Sprint(sec), sec.String(), sec.GoString(), fmt.Sprintf("%v", errors.New(fmt.Sprint(&sec))))
	core, logs := observer.New(zapcore.DebugLevel)
	zap.New(core).Info("secret", zap.Any("secret", sec), zap.Any("pointer", &sec), zap.Any("store", store), zap.Reflect("reflected", inside))
	for _, e := range logs.All() {
		js, err := json.Marshal(e.ContextMap())
		require.NoError(t, err)
		out = append(out, string(js))
	}

	require.Contains(t, fmt.Sprint(sec), "credentials.Secret{username password ssh-privatekey known_hosts cacerts insecureSkipVerify}",
		"it says which keys are set")
	for _, o := range out {
		for _, value := range []string{"us3r-name-value", password, "ca-bundle-value", "AAAAC3NzaC1lZDI1NTE5", key[40:80]} {
			require.NotContains(t, o, value)
		}
	}
}

// A known_hosts line the store accepts is what x/crypto/ssh reads.
func TestKnownHostsCheckAcceptsHashedAndMarkedLines(t *testing.T) {
	_, pub, err := gitserver.NewKey()
	require.NoError(t, err)
	line := string(ssh.MarshalAuthorizedKey(pub))
	require.NoError(t, checkKnownHosts([]byte("|1|F1E1KeoE/eEWhi10WpGv4OdiO6Y=|3988QV0VE8wmZL7suNrYQLITLCg= "+line+
		"@cert-authority *.example.com "+line+"@revoked old.example.com "+line)))
	require.ErrorContains(t, checkKnownHosts([]byte("# only a comment\n")), "holds no host key")
}
