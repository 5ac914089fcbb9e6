package codec

import (
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"
)

// maxRequestBody bounds one /encode or /decode request. Temporal refuses payloads over 2 MiB by default,
// and the Web UI sends one event's payloads at a time; the bound keeps a stray client from filling memory.
const maxRequestBody = 32 << 20

// ServerOptions configure Handler.
type ServerOptions struct {
	// CORSOrigins are the Web UI origins (scheme://host[:port]) whose browsers may call the server.
	CORSOrigins []string
	// AuthToken, when set, must come as "Authorization: Bearer <token>" on every /encode and /decode.
	AuthToken string
}

// Handler is the SDK's codec server (POST /encode, POST /decode, as the Temporal Web UI and CLI call them)
// for c, behind CORS for the Web UI and an optional bearer token.
func Handler(c converter.PayloadCodec, o ServerOptions) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" {
			w.Header().Add("Vary", "Origin")
			if slices.Contains(o.CORSOrigins, origin) {
				h := w.Header()
				h.Set("Access-Control-Allow-Origin", origin)
				// The Web UI sends its access token only with credentials allowed, and names the namespace.
				h.Set("Access-Control-Allow-Credentials", "true")
				h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
				h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
			}
		}
		// A preflight carries no credentials: answer it before checking the token.
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if o.AuthToken != "" && !bearerMatches(r.Header.Get("Authorization"), o.AuthToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="flotilla codec server"`)
			http.Error(w, "codec server: missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
		inner.ServeHTTP(w, r)
	})
}

func bearerMatches(header, token string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}
