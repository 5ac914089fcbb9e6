// Package temporalconn is how every Flotilla process connects to Temporal: the address and namespace its
// command line already has, plus TLS, mTLS and an API key, configured by flags that default from the
// environment variables Temporal's CLI and SDK (envconfig) read. Secrets never travel on a command line,
// where ps and shell history would show them: flags only name files, and an API key comes from
// TEMPORAL_API_KEY or a file.
package temporalconn

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/internal/codec"
)

// Environment variables, spelled as Temporal's CLI and go.temporal.io/sdk/contrib/envconfig spell them,
// so one environment configures `temporal` and Flotilla alike.
const (
	EnvTLS                     = "TEMPORAL_TLS"
	EnvServerCA                = "TEMPORAL_TLS_SERVER_CA_CERT_PATH"
	EnvClientCert              = "TEMPORAL_TLS_CLIENT_CERT_PATH"
	EnvClientKey               = "TEMPORAL_TLS_CLIENT_KEY_PATH"
	EnvServerName              = "TEMPORAL_TLS_SERVER_NAME"
	EnvDisableHostVerification = "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"
	EnvAPIKey                  = "TEMPORAL_API_KEY"
	// EnvAPIKeyFile is Flotilla's own: Temporal has no variable for a key kept in a file.
	EnvAPIKeyFile = "FLOTILLA_API_KEY_FILE"
)

// DefaultConnectTimeout is how long Dial keeps trying a server it cannot reach when Settings say nothing:
// long enough to ride out a frontend restarting next to the worker, short enough that a wrong address
// fails a deployment's rollout instead of hanging it.
const DefaultConnectTimeout = time.Minute

// Settings say where Temporal is and how to prove who we are to it. The zero value, with an address, is
// a plain gRPC connection, as Temporal's local development server wants. Nothing here holds a secret: the
// API key stays in its file or in TEMPORAL_API_KEY until a call needs it.
type Settings struct {
	Address, Namespace string

	// TLS asks for TLS even with no file to configure it: the system's roots check the server, as for
	// Temporal Cloud. A CA file, a client certificate, a server name or an API key imply it.
	TLS bool
	// TLSDisabled is --tls=false or TEMPORAL_TLS=false: plain gRPC even with an API key, for a local proxy
	// that terminates TLS. It contradicts any TLS file.
	TLSDisabled bool

	ServerCAFile, ClientCertFile, ClientKeyFile, ServerName string
	// DisableHostVerification skips checking the server's certificate altogether (Go's
	// InsecureSkipVerify), as the Temporal CLI's flag of that name does; ServerName is the safer fix for a
	// certificate issued for another name.
	DisableHostVerification bool

	// APIKeyFile holds the API key, re-read when it changes so a rotated key is used without a restart. It
	// wins over TEMPORAL_API_KEY, being the more specific of the two.
	APIKeyFile string

	// CodecKeyFile is a keyring (internal/codec): when set, every payload this client writes is encrypted
	// with its first key and payloads encrypted with any of its keys are read. Read once, at ClientOptions.
	CodecKeyFile string
	// RequireEncrypted refuses any payload the keyring did not encrypt (codec.Codec.Strict).
	RequireEncrypted bool

	// ConnectTimeout bounds Dial's retries of an unreachable server; 0 is DefaultConnectTimeout.
	ConnectTimeout time.Duration

	// Identity is the client's identity on the server (workers' pollers show it); empty: the SDK's.
	Identity string

	// MetricsHandler receives the SDK's client and worker metrics; nil: none are recorded.
	MetricsHandler client.MetricsHandler

	// envErr is a TEMPORAL_TLS* boolean that does not parse, kept until ClientOptions reports it unless
	// the flag it defaults is given.
	envErr map[string]error
}

// AddFlags registers the TLS and API key flags on a standard library flag set, each defaulting from its
// environment variable. --address and --temporal-namespace stay with each program, which had them first.
func (s *Settings) AddFlags(fs *flag.FlagSet) {
	s.addFlags(
		func(p *string, name, value, usage string) { fs.StringVar(p, name, value, usage) },
		func(v *boolValue, name, usage string) { fs.Var(v, name, usage) },
	)
}

// AddPFlags is AddFlags for cobra's pflag sets, with the same names and defaults.
func (s *Settings) AddPFlags(fs *pflag.FlagSet) {
	s.addFlags(
		func(p *string, name, value, usage string) { fs.StringVar(p, name, value, usage) },
		// NoOptDefVal lets `--tls` stand alone as a pflag boolean does.
		func(v *boolValue, name, usage string) { fs.VarPF(v, name, "", usage).NoOptDefVal = "true" },
	)
}

func (s *Settings) addFlags(str func(p *string, name, value, usage string), boolean func(v *boolValue, name, usage string)) {
	boolean(s.boolFlag("tls", EnvTLS, func(v bool) { s.TLS, s.TLSDisabled = v, !v }, func() string {
		switch {
		case s.TLS:
			return "true"
		case s.TLSDisabled:
			return "false"
		}
		return ""
	}), "tls", "connect to Temporal over TLS, checking the server against the system's roots unless --tls-ca-file is given (env "+EnvTLS+"); "+
		"implied by the other --tls-* flags and by an API key; --tls=false keeps an API key on plain gRPC")
	str(&s.ServerCAFile, "tls-ca-file", os.Getenv(EnvServerCA), "PEM file of the CA that signed Temporal's server certificate (env "+EnvServerCA+")")
	str(&s.ClientCertFile, "tls-cert-file", os.Getenv(EnvClientCert), "PEM client certificate for mTLS, with --tls-key-file; re-read at each new connection (env "+EnvClientCert+")")
	str(&s.ClientKeyFile, "tls-key-file", os.Getenv(EnvClientKey), "PEM private key of --tls-cert-file (env "+EnvClientKey+")")
	str(&s.ServerName, "tls-server-name", os.Getenv(EnvServerName), "name to expect in Temporal's server certificate, when it differs from --address's host (env "+EnvServerName+")")
	boolean(s.boolFlag("tls-disable-host-verification", EnvDisableHostVerification, func(v bool) { s.DisableHostVerification = v }, func() string {
		return fmt.Sprint(s.DisableHostVerification)
	}), "tls-disable-host-verification", "do not check Temporal's server certificate at all; for tests only (env "+EnvDisableHostVerification+")")
	str(&s.APIKeyFile, "api-key-file", os.Getenv(EnvAPIKeyFile),
		"file holding the Temporal API key, re-read when it changes (env "+EnvAPIKeyFile+"; or the key itself in "+EnvAPIKey+", never on the command line)")
	str(&s.CodecKeyFile, "codec-key-file", os.Getenv(codec.EnvKeyFile),
		"keyring file: encrypt workflow inputs, results, memos and signals with its first key and decrypt with any (env "+codec.EnvKeyFile+"); worker, agents and CLI need the same file")
	boolean(s.boolFlag("require-encrypted-payloads", codec.EnvRequireEncrypted, func(v bool) { s.RequireEncrypted = v }, func() string {
		return fmt.Sprint(s.RequireEncrypted)
	}), "require-encrypted-payloads", "refuse every payload that --codec-key-file's keys did not encrypt: a task or signal queued by anyone without "+
		"the keyring is refused unread (env "+codec.EnvRequireEncrypted+"); for agents above all")
}

// boolFlag reads env now, as the string flags do, and keeps a value that does not parse as an error for
// ClientOptions: a TEMPORAL_TLS=yes silently taken as false would connect in the clear.
func (s *Settings) boolFlag(name, env string, set func(bool), get func() string) *boolValue {
	v := &boolValue{set: set, get: get, given: func() { delete(s.envErr, name) }}
	if raw, ok := os.LookupEnv(env); ok && raw != "" {
		if b, ok := parseEnvBool(raw); ok {
			set(b)
		} else {
			if s.envErr == nil {
				s.envErr = map[string]error{}
			}
			s.envErr[name] = fmt.Errorf("%s=%q: want true, false, 1 or 0", env, raw)
		}
	}
	return v
}

// parseEnvBool accepts what envconfig accepts, so a value means the same to `temporal` and to Flotilla.
func parseEnvBool(s string) (v, ok bool) {
	switch strings.ToLower(s) {
	case "1", "true":
		return true, true
	case "0", "false":
		return false, true
	}
	return false, false
}

// boolValue is a boolean flag for both flag packages that can tell "false" from "not given", which
// --tls needs: an API key turns TLS on unless TLS was turned off on purpose.
type boolValue struct {
	set   func(bool)
	get   func() string
	given func()
}

func (b *boolValue) Set(s string) error {
	v, ok := parseEnvBool(s)
	if !ok {
		return fmt.Errorf("want true or false")
	}
	b.set(v)
	b.given()
	return nil
}

func (b *boolValue) String() string {
	if b == nil || b.get == nil { // flag.PrintDefaults calls String on a zero value
		return ""
	}
	return b.get()
}

func (b *boolValue) Type() string     { return "bool" }
func (b *boolValue) IsBoolFlag() bool { return true }

// String describes the connection for logs and errors; it names where the API key comes from, never the key.
func (s Settings) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s namespace %s", s.Address, s.Namespace)
	switch {
	case s.TLSDisabled:
		b.WriteString(", plain gRPC")
	case s.tlsWanted():
		b.WriteString(", TLS")
		if s.ServerCAFile != "" {
			fmt.Fprintf(&b, ", CA %s", s.ServerCAFile)
		}
		if s.ClientCertFile != "" {
			fmt.Fprintf(&b, ", client certificate %s", s.ClientCertFile)
		}
		if s.ServerName != "" {
			fmt.Fprintf(&b, ", server name %s", s.ServerName)
		}
		if s.DisableHostVerification {
			b.WriteString(", server certificate NOT verified")
		}
	default:
		b.WriteString(", plain gRPC")
	}
	switch {
	case s.APIKeyFile != "":
		fmt.Fprintf(&b, ", API key from %s", s.APIKeyFile)
	case os.Getenv(EnvAPIKey) != "":
		b.WriteString(", API key from " + EnvAPIKey)
	}
	if s.CodecKeyFile != "" {
		fmt.Fprintf(&b, ", payloads encrypted with keys from %s", s.CodecKeyFile)
	}
	return b.String()
}

// tlsWanted is whether anything in s asks for TLS, before TLSDisabled has its say.
func (s Settings) tlsWanted() bool {
	return s.TLS || s.tlsFileGiven() || s.APIKeyFile != "" || os.Getenv(EnvAPIKey) != ""
}

func (s Settings) tlsFileGiven() bool {
	return s.ServerCAFile != "" || s.ClientCertFile != "" || s.ClientKeyFile != "" || s.ServerName != "" || s.DisableHostVerification
}
