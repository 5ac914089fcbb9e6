package credentials

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"sigs.k8s.io/yaml"
)

// The keys of a secret folder: Fleet's, which are Kubernetes' for basic-auth and ssh-auth Secrets
// (corev1.BasicAuthUsernameKey, SSHAuthPrivateKey) and the ones Fleet reads besides (known_hosts; cacerts
// and insecureSkipVerify of a helmSecretName), plus insecureIgnoreHostKey, Flotilla's own.
const (
	keyUsername              = "username"
	keyPassword              = "password"
	keySSHPrivateKey         = "ssh-privatekey"
	keyKnownHosts            = "known_hosts"
	keyCACerts               = "cacerts"
	keyInsecureSkipVerify    = "insecureSkipVerify"
	keyInsecureIgnoreHostKey = "insecureIgnoreHostKey"
	// keyWorkspaces and keyURLPrefixes say who may use a secret and where it goes (Secret.Workspaces,
	// Secret.URLPrefixes): one entry a line, or separated by commas.
	keyWorkspaces  = "workspaces"
	keyURLPrefixes = "urlPrefixes"
)

// maxKey bounds one key's value: a CA bundle is the largest a secret holds.
const maxKey = 1 << 20

// form is how one layout spells each key, for messages.
type form struct {
	where                                                                         string
	username, password, sshPrivateKey, knownHosts, caBundle, insecure, ignoreHost string
}

func fileForm(path string) form {
	return form{where: "credentials file " + path, username: "username", password: "password", sshPrivateKey: "sshPrivateKey",
		knownHosts: "knownHosts", caBundle: "caBundle", insecure: "insecureSkipTLSVerify", ignoreHost: "insecureIgnoreHostKey"}
}

func folderForm(path string) form {
	return form{where: "credentials folder " + path, username: keyUsername, password: keyPassword, sshPrivateKey: keySSHPrivateKey,
		knownHosts: keyKnownHosts, caBundle: keyCACerts, insecure: keyInsecureSkipVerify, ignoreHost: keyInsecureIgnoreHostKey}
}

func (f form) errorf(secret, key, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if key == "" {
		return fmt.Errorf("%s: secret %q: %s", f.where, secret, msg)
	}
	return fmt.Errorf("%s: secret %q: key %s: %s", f.where, secret, key, msg)
}

// fileSecret is one entry of the file form. Keys match case-insensitively (encoding/json), as the
// --git-credentials file's username and password always did.
type fileSecret struct {
	Username              *string  `json:"username"`
	Password              *string  `json:"password"`
	SSHPrivateKey         *string  `json:"sshPrivateKey"`
	KnownHosts            *string  `json:"knownHosts"`
	CABundle              *string  `json:"caBundle"`
	InsecureSkipTLSVerify bool     `json:"insecureSkipTLSVerify"`
	InsecureIgnoreHostKey bool     `json:"insecureIgnoreHostKey"`
	Workspaces            []string `json:"workspaces"`
	URLPrefixes           []string `json:"urlPrefixes"`
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// readFile reads the file form. No parser message is passed on whole: YAML's and JSON's may quote the
// text they stumbled on, which may be a secret.
func readFile(path string) (map[string]*Secret, error) {
	f := fileForm(path)
	data, err := readBounded(path, 16*maxKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.where, err)
	}
	doc, err := yaml.YAMLToJSON(data)
	if err != nil {
		where := ""
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			where = " (line " + m[1] + ")"
		}
		return nil, fmt.Errorf("%s: not valid YAML%s", f.where, where)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a YAML map of secret name to its keys (username, password, sshPrivateKey, knownHosts, caBundle, insecureSkipTLSVerify, insecureIgnoreHostKey, workspaces, urlPrefixes)", f.where)
	}
	secrets := map[string]*Secret{}
	for name, body := range raw {
		if name == "" {
			return nil, fmt.Errorf("%s: a secret with an empty name", f.where)
		}
		var fs fileSecret
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fs); err != nil {
			return nil, fileDecodeError(f, name, err)
		}
		sec := &Secret{InsecureSkipTLSVerify: fs.InsecureSkipTLSVerify, InsecureIgnoreHostKey: fs.InsecureIgnoreHostKey,
			Workspaces: fs.Workspaces, URLPrefixes: fs.URLPrefixes}
		for _, v := range []struct {
			to   *[]byte
			from *string
		}{{&sec.Username, fs.Username}, {&sec.Password, fs.Password}, {&sec.SSHPrivateKey, fs.SSHPrivateKey},
			{&sec.KnownHosts, fs.KnownHosts}, {&sec.CABundle, fs.CABundle}} {
			if v.from != nil {
				*v.to = []byte(*v.from)
			}
		}
		if err := check(f, name, sec); err != nil {
			return nil, err
		}
		secrets[name] = sec
	}
	return secrets, nil
}

var unknownField = regexp.MustCompile(`^json: unknown field "([^"]*)"$`)

// fileDecodeError names the key that did not decode and what was expected, never the value.
func fileDecodeError(f form, name string, err error) error {
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return f.errorf(name, "", "not a map of keys (username, password, sshPrivateKey, knownHosts, caBundle, insecureSkipTLSVerify, insecureIgnoreHostKey, workspaces, urlPrefixes)")
	case errors.As(err, &typeErr):
		want := "a string (quote it)"
		if typeErr.Type.Kind() == reflect.Bool {
			want = "true or false"
		}
		return f.errorf(name, typeErr.Field, "not %s", want)
	}
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		return f.errorf(name, m[1], "unknown key (known: username, password, sshPrivateKey, knownHosts, caBundle, insecureSkipTLSVerify, insecureIgnoreHostKey, workspaces, urlPrefixes)")
	}
	return f.errorf(name, "", "does not decode")
}

// readFolder reads the folder form: dir/<secret>/<key>. Names starting with a dot are skipped: a mounted
// Secret's folder holds its keys as links into a hidden ..data folder.
func readFolder(dir string) (map[string]*Secret, error) {
	f := folderForm(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.where, err)
	}
	secrets := map[string]*Secret{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.where, err)
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("%s: %s is not a folder: each secret is a folder of keys, <folder>/<secret name>/<key>", f.where, name)
		}
		sec, err := readSecretFolder(f, filepath.Join(dir, name), name)
		if err != nil {
			return nil, err
		}
		if err := check(f, name, sec); err != nil {
			return nil, err
		}
		secrets[name] = sec
	}
	return secrets, nil
}

var folderKeys = []string{keyUsername, keyPassword, keySSHPrivateKey, keyKnownHosts, keyCACerts, keyInsecureSkipVerify, keyInsecureIgnoreHostKey,
	keyWorkspaces, keyURLPrefixes}

func readSecretFolder(f form, dir, name string) (*Secret, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.where, err)
	}
	sec := &Secret{}
	for _, e := range entries {
		key := e.Name()
		if strings.HasPrefix(key, ".") {
			continue
		}
		data, err := readBounded(filepath.Join(dir, key), maxKey)
		if err != nil {
			return nil, f.errorf(name, key, "%v", err)
		}
		switch key {
		case keyUsername:
			sec.Username = data
		case keyPassword:
			sec.Password = data
		case keySSHPrivateKey:
			sec.SSHPrivateKey = data
		case keyKnownHosts:
			sec.KnownHosts = data
		case keyCACerts:
			sec.CABundle = data
		case keyWorkspaces:
			sec.Workspaces = listOf(data)
		case keyURLPrefixes:
			sec.URLPrefixes = listOf(data)
		case keyInsecureSkipVerify, keyInsecureIgnoreHostKey:
			v, err := strconv.ParseBool(strings.TrimSpace(string(data)))
			if err != nil {
				return nil, f.errorf(name, key, "not true or false")
			}
			if key == keyInsecureSkipVerify {
				sec.InsecureSkipTLSVerify = v
			} else {
				sec.InsecureIgnoreHostKey = v
			}
		default:
			return nil, f.errorf(name, key, "unknown key (known: %s)", strings.Join(folderKeys, ", "))
		}
	}
	return sec, nil
}

// listOf splits a key file holding a list: one entry a line, or separated by commas.
func listOf(data []byte) []string {
	var out []string
	for _, f := range strings.FieldsFunc(string(data), func(r rune) bool { return r == '\n' || r == ',' || r == '\r' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return data, nil
}

// check validates a secret as loaded, so that a bad one stops the worker at start rather than failing a
// GitRepo later. A trailing line break of username and password is dropped: files written by an editor or
// echo end with one, and no credential does.
func check(f form, name string, s *Secret) error {
	s.Username = bytes.TrimRight(s.Username, "\r\n")
	s.Password = bytes.TrimRight(s.Password, "\r\n")
	if len(s.set()) == 0 {
		return f.errorf(name, "", "has no keys")
	}
	if len(s.Username) > 0 && len(s.Password) == 0 {
		return f.errorf(name, f.username, "set without %s", f.password)
	}
	if len(s.SSHPrivateKey) > 0 {
		if _, err := ssh.ParsePrivateKey(s.SSHPrivateKey); err != nil {
			var pass *ssh.PassphraseMissingError
			if errors.As(err, &pass) {
				return f.errorf(name, f.sshPrivateKey, "encrypted with a passphrase, which Flotilla does not take: protect the file instead")
			}
			return f.errorf(name, f.sshPrivateKey, "not a private key SSH can read (PEM or OpenSSH form)")
		}
	}
	if len(s.KnownHosts) > 0 {
		if err := checkKnownHosts(s.KnownHosts); err != nil {
			return f.errorf(name, f.knownHosts, "%v", err)
		}
		if s.InsecureIgnoreHostKey {
			return f.errorf(name, f.ignoreHost, "set with %s: give one", f.knownHosts)
		}
	}
	if len(s.CABundle) > 0 && !x509.NewCertPool().AppendCertsFromPEM(s.CABundle) {
		return f.errorf(name, f.caBundle, "holds no PEM certificate")
	}
	for _, w := range s.Workspaces {
		if w != "*" && !workspaceName.MatchString(w) {
			return f.errorf(name, keyWorkspaces, "%q is not a workspace (a namespace name, or * for every workspace)", w)
		}
	}
	for _, p := range s.URLPrefixes {
		if !strings.Contains(p, "://") && !strings.Contains(p, "@") {
			return f.errorf(name, keyURLPrefixes, "%q is not a URL prefix (https://host/path/, ssh://…, oci://…, or git@host:path)", p)
		}
	}
	return nil
}

var workspaceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// checkKnownHosts parses every line; an error names the line, not its text (host keys are public, but a
// misplaced secret could land here).
func checkKnownHosts(data []byte) error {
	entries := 0
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if _, _, _, _, _, err := ssh.ParseKnownHosts(line); err != nil {
			return fmt.Errorf("line %d is not a known_hosts entry (host[,host...] key-type base64-key)", i+1)
		}
		entries++
	}
	if entries == 0 {
		return errors.New("holds no host key")
	}
	return nil
}
