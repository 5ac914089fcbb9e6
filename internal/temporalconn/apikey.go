package temporalconn

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// apiKeyExpiry is when the API key the settings name stops being valid, if it says so: Temporal Cloud's
// API keys are JWTs whose payload carries "exp". A server refusing a key says only that it refused it,
// and "expired" is the one cause an operator can see without asking anyone. The signature is not checked:
// the expiry only explains a refusal the server already made, it never decides anything.
func apiKeyExpiry(s Settings) (time.Time, bool) {
	key := envAPIKey()
	if s.APIKeyFile != "" {
		var err error
		if key, err = (&keyFile{path: s.APIKeyFile}).get(context.Background()); err != nil {
			return time.Time{}, false
		}
	}
	return jwtExpiry(strings.TrimSpace(key))
}

// jwtExpiry reads the "exp" claim of a JWT (header.payload.signature, base64url without padding).
func jwtExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	secs, err := claims.Exp.Float64()
	if err != nil || secs <= 0 {
		return time.Time{}, false
	}
	return time.Unix(int64(secs), 0).UTC(), true
}

// expiredKeyHint says the key expired, when it did, for the error of a refused key.
func expiredKeyHint(s Settings, now time.Time) (string, bool) {
	exp, ok := apiKeyExpiry(s)
	if !ok || !exp.Before(now) {
		return "", false
	}
	return credentialName(s) + " expired at " + exp.Format(time.RFC3339) + " (" + ago(now.Sub(exp)) + " ago): issue a new one", true
}

func ago(d time.Duration) string {
	if d >= 48*time.Hour {
		return strconv.Itoa(int(d/(24*time.Hour))) + " days"
	}
	return d.Round(time.Second).String()
}
