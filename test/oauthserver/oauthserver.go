// Package oauthserver runs a small OAuth 2.0 token endpoint that performs
// RFC 8693 token exchange, for tests that need a delegated MCP server end
// to end. It checks what a strict authorization server checks (grant type,
// client authentication, the subject token, the requested token type) and
// issues a token that is a pure function of the actor and the audience, so
// a test can configure the MCP server to accept exactly that token — and
// nothing else, the subject token included.
package oauthserver

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// TB is the part of testing.TB the package uses.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Server is a running token endpoint.
type Server struct {
	// URL is the token endpoint (https).
	URL string
	// Roots trusts the server's certificate.
	Roots *x509.CertPool
	// CAPEM is the same certificate, PEM-encoded, as a CA bundle holds it.
	CAPEM []byte

	clientID, clientSecret string
	srv                    *httptest.Server

	mu        sync.Mutex
	subjects  map[string]string // subject token -> actor
	requests  int
	last      url.Values
	expiresIn int
	failWith  string
}

// Start serves a token endpoint over TLS on 127.0.0.1 for the test's
// duration. It accepts the given client credentials.
func Start(t TB, clientID, clientSecret string) *Server {
	t.Helper()
	s := &Server{clientID: clientID, clientSecret: clientSecret, subjects: map[string]string{}, expiresIn: 300}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL + "/token"
	s.Roots = x509.NewCertPool()
	s.Roots.AddCert(s.srv.Certificate())
	s.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	return s
}

// AddSubject makes token a valid subject token for actor.
func (s *Server) AddSubject(token, actor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subjects[token] = actor
}

// SetExpiresIn sets the lifetime of issued tokens, in seconds.
func (s *Server) SetExpiresIn(seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expiresIn = seconds
}

// FailWith makes every exchange answer the OAuth error code (empty: none).
func (s *Server) FailWith(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failWith = code
}

// Requests counts exchange requests received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// LastForm is the form of the last request (a copy).
func (s *Server) LastForm() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := url.Values{}
	for k, v := range s.last {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// TokenFor is the token the server issues to actor for audience and scopes.
func TokenFor(actor, audience string, scopes []string) string {
	sc := append([]string(nil), scopes...)
	sort.Strings(sc)
	sum := sha256.Sum256([]byte(actor + "\x00" + audience + "\x00" + strings.Join(sc, " ")))
	return "exchanged-" + hex.EncodeToString(sum[:16])
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request")
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	s.mu.Lock()
	s.last = r.PostForm
	fail, expires := s.failWith, s.expiresIn
	actor, known := s.subjects[r.PostForm.Get("subject_token")]
	s.mu.Unlock()
	f := r.PostForm
	switch {
	case !ok || id != s.clientID || secret != s.clientSecret:
		oauthError(w, http.StatusUnauthorized, "invalid_client")
	case fail != "":
		oauthError(w, http.StatusBadRequest, fail)
	case f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange":
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
	case f.Get("subject_token_type") == "" || f.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:access_token":
		oauthError(w, http.StatusBadRequest, "invalid_request")
	case !known:
		oauthError(w, http.StatusBadRequest, "invalid_grant")
	case f.Get("audience") == "" || f.Get("resource") == "":
		oauthError(w, http.StatusBadRequest, "invalid_target")
	default:
		scopes := strings.Fields(f.Get("scope"))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"access_token":      TokenFor(actor, f.Get("audience"), scopes),
			"issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
			"token_type":        "Bearer",
			"expires_in":        expires,
			"scope":             strings.Join(scopes, " "),
		})
	}
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}
