package kubeconfigsecret

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const notAKubeconfig = `key "value" is not a kubeconfig`

// FuzzSelfContained reads any bytes as the kubeconfig of a Secret. What it accepts, built into a REST
// config for any of its contexts as the worker builds one (agentclient), names no file to read (CA,
// client certificate or key, token file) and no program to run (exec, auth-provider); what it refuses,
// its error names in fixed words and the names of clusters and users only, never by what they hold
// (tokens, passwords, keys, commands).
func FuzzSelfContained(f *testing.F) {
	for _, s := range []string{
		inline,
		`{"apiVersion":"v1","kind":"Config","clusters":[{"name":"edge","cluster":{"server":"https://10.0.0.1:6443","certificate-authority-data":"Y2E="}}],` +
			`"users":[{"name":"admin","user":{"client-certificate-data":"Y2VydA==","client-key-data":"a2V5"}}],` +
			`"contexts":[{"name":"edge","context":{"cluster":"edge","user":"admin","namespace":"web"}}],"current-context":"edge"}`,
		"apiVersion: v1\nkind: Config\nclusters:\n- name: edge\n  cluster: {server: 'https://evil.example.com', certificate-authority: /etc/ssl/ca.pem}\n" +
			"users:\n- name: admin\n  user:\n    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n" +
			"    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, 'cat /etc/shadow'], env: [{name: TOKEN, value: s3cr3t-exec-env}]}\n" +
			"contexts:\n- name: edge\n  context: {cluster: edge, user: admin}\ncurrent-context: edge\n",
		"apiVersion: v1\nkind: Config\nusers:\n- name: oidc\n  user:\n    auth-provider: {name: oidc, config: {client-secret: s3cr3t-oidc-client, id-token: ey.s3cr3t.jwt}}\n" +
			"- name: files\n  user: {client-certificate: cert.pem, client-key: key.pem, token: s3cr3t-static-token}\n",
		"apiVersion: v1\nkind: Config\nusers:\n- name: a\n  user: {token: first}\n- name: a\n  user: {tokenFile: /etc/passwd}\n" +
			"contexts:\n- name: c\n  context: {cluster: x, user: a}\ncurrent-context: c\n",
		"password: hunter2\n\t- [", "", "{}", "null", "apiVersion: v1\nkind: Secret\n", "clusters: 7\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := selfContained(data)
		cfg, loadErr := clientcmd.Load(data)
		if loadErr != nil {
			if err == nil || err.Error() != notAKubeconfig {
				t.Fatalf("unparsable, and: %v", err)
			}
			return
		}
		if err == nil {
			checkBuildsNoFileNorProgram(t, cfg)
			return
		}
		// Without the names of clusters and users, a refusal is fixed words only.
		msg := err.Error()
		for n := range cfg.Clusters {
			msg = strings.ReplaceAll(msg, "clusters["+n+"].", "clusters[].")
		}
		for n := range cfg.AuthInfos {
			msg = strings.ReplaceAll(msg, "users["+n+"].", "users[].")
		}
		items, ok := strings.CutPrefix(msg, refusalPrefix+"[")
		if items, ok = strings.CutSuffix(items, "]"); !ok {
			t.Fatalf("refused for another reason: %v", err)
		}
		for rest := items; rest != ""; {
			var item string
			for _, w := range refusalItems {
				if strings.HasPrefix(rest, w) {
					item = w
				}
			}
			if item == "" {
				t.Fatalf("the refusal holds more than names and fixed words (%q): %v", rest, err)
			}
			rest = strings.TrimPrefix(strings.TrimPrefix(rest, item), " ")
		}
	})
}

const refusalPrefix = "names files or programs on the worker's host, which a kubeconfig from a Secret may not: "

// refusalItems are what a refusal lists, the names of clusters and users left out.
var refusalItems = []string{
	"clusters[].certificate-authority (use certificate-authority-data)",
	"users[].client-certificate (use client-certificate-data)",
	"users[].client-key (use client-key-data)",
	"users[].tokenFile (use token)",
	"users[].exec (use a token or a client certificate)",
	"users[].auth-provider (use a token or a client certificate)",
}

// checkBuildsNoFileNorProgram builds every context as agentclient does and checks the REST config.
func checkBuildsNoFileNorProgram(t *testing.T, cfg *clientcmdapi.Config) {
	t.Helper()
	for name := range cfg.Contexts {
		rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		if err != nil {
			continue
		}
		tls := rc.TLSClientConfig
		switch {
		case tls.CAFile != "" || tls.CertFile != "" || tls.KeyFile != "":
			t.Fatalf("context %q: accepted, and reads the files %q %q %q", name, tls.CAFile, tls.CertFile, tls.KeyFile)
		case rc.BearerTokenFile != "":
			t.Fatalf("context %q: accepted, and reads the token file %q", name, rc.BearerTokenFile)
		case rc.ExecProvider != nil:
			t.Fatalf("context %q: accepted, and runs %q", name, rc.ExecProvider.Command)
		case rc.AuthProvider != nil:
			t.Fatalf("context %q: accepted, with the auth provider %q", name, rc.AuthProvider.Name)
		}
	}
}
