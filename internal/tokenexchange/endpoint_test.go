package tokenexchange_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// testAS is an in-process RFC 8693 token endpoint. It checks every parameter
// the way a strict authorization server would and answers with the OAuth
// error a real one would send, so the error cases below are produced by
// policy, not by canned replies. Things a correct client can never get wrong
// (method, content type, Accept, credentials in the body, duplicated or
// unknown parameters) are recorded as violations and fail the test.
type testAS struct {
	srv *httptest.Server

	// Registered confidential clients: id -> secret, and whether the client
	// may use the token exchange grant.
	clients  map[string]string
	exchange map[string]bool
	// subjects maps a valid subject token to its subject type.
	subjects map[string]string
	// Audiences and scopes this issuer knows; resource per audience.
	audiences map[string]string
	scopes    []string
	// grantDisabled answers every request with unsupported_grant_type.
	grantDisabled bool
	// expiresIn is sent unless negative.
	expiresIn int
	// omitScope leaves the scope member out of the response.
	omitScope bool

	// respond, when set, replaces the whole answer (malformed responses,
	// redirects, oversized bodies) after the request was counted.
	respond func(w http.ResponseWriter, r *http.Request)
	// onRequest, when set, runs as each request arrives.
	onRequest func()

	requests atomic.Int32

	mu         sync.Mutex
	violations []string
	issued     map[string]issuedToken
	lastForm   url.Values
	lastAuth   string
}

type issuedToken struct {
	clientID, subject, audience, resource string
	scopes                                []string
}

const (
	asClientID     = "mcp-catalog:operator" // a ':' must survive Basic encoding
	asClientSecret = "s3cr:t +/%ü=client-secret-7Qx"
	asSubjectToken = "actor-subject-token-Zr41kP"
	asAudience     = "mcp-api"
	asResource     = "https://mcp.example.test/mcp"
)

func newTestAS(t *testing.T) *testAS { return newTestASWith(t, true) }

// newTestASWith starts the endpoint over TLS or, for the AllowHTTP tests,
// plain http.
func newTestASWith(t *testing.T, useTLS bool) *testAS {
	t.Helper()
	as := &testAS{
		clients:   map[string]string{asClientID: asClientSecret, "no-exchange": "other-secret"},
		exchange:  map[string]bool{asClientID: true},
		subjects:  map[string]string{asSubjectToken: "urn:ietf:params:oauth:token-type:access_token"},
		audiences: map[string]string{asAudience: asResource, "other-api": "https://other.example.test/mcp"},
		scopes:    []string{"records.read", "records.write"},
		expiresIn: 300,
		issued:    map[string]issuedToken{},
	}
	if useTLS {
		as.srv = httptest.NewTLSServer(http.HandlerFunc(as.serve))
	} else {
		as.srv = httptest.NewServer(http.HandlerFunc(as.serve))
	}
	t.Cleanup(as.srv.Close)
	return as
}

// URL is the token endpoint.
func (as *testAS) URL() string { return as.srv.URL + "/oauth/token" }

func (as *testAS) violation(format string, args ...any) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.violations = append(as.violations, fmt.Sprintf(format, args...))
}

func (as *testAS) checkNoViolations(t *testing.T) {
	t.Helper()
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, v := range as.violations {
		t.Errorf("token endpoint saw a protocol violation: %s", v)
	}
}

func (as *testAS) issuedToken(value string) (issuedToken, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	it, ok := as.issued[value]
	return it, ok
}

func (as *testAS) form() url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.lastForm
}

func (as *testAS) authorization() string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.lastAuth
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("Cache-Control", "no-store")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="token"`)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{
		"error":             code,
		"error_description": "rejected by the test token endpoint",
	})
}

var allowedParams = []string{"grant_type", "subject_token", "subject_token_type", "requested_token_type", "audience", "scope", "resource"}

func (as *testAS) serve(w http.ResponseWriter, r *http.Request) {
	as.requests.Add(1)
	if as.onRequest != nil {
		as.onRequest()
	}
	if as.respond != nil {
		as.respond(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/oauth/token" {
		as.violation("request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		as.violation("content type %q", r.Header.Get("Content-Type"))
	}
	if r.Header.Get("Accept") != "application/json" {
		as.violation("accept %q", r.Header.Get("Accept"))
	}
	if r.URL.RawQuery != "" {
		as.violation("parameters in the query string")
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	form := r.PostForm
	as.mu.Lock()
	as.lastForm = form
	as.lastAuth = r.Header.Get("Authorization")
	as.mu.Unlock()
	for k, v := range form {
		if !slices.Contains(allowedParams, k) {
			// Includes client_id / client_secret: Basic is the only
			// authentication this client may use.
			as.violation("unexpected parameter %q", k)
		}
		if len(v) != 1 {
			as.violation("parameter %q sent %d times", k, len(v))
		}
	}

	// Client authentication, RFC 6749 §2.3.1: both halves form-urlencoded.
	user, pass, ok := r.BasicAuth()
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	id, err1 := url.QueryUnescape(user)
	secret, err2 := url.QueryUnescape(pass)
	if err1 != nil || err2 != nil || as.clients[id] == "" || as.clients[id] != secret {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	if as.grantDisabled || form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	if !as.exchange[id] {
		oauthError(w, http.StatusBadRequest, "unauthorized_client")
		return
	}
	subjectType, known := as.subjects[form.Get("subject_token")]
	switch {
	case form.Get("subject_token") == "" || form.Get("subject_token_type") == "":
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	case form.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:access_token":
		as.violation("requested_token_type %q", form.Get("requested_token_type"))
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	case known && form.Get("subject_token_type") != subjectType:
		// A token presented as the wrong type is a malformed request.
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	case !known:
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	aud := form.Get("audience")
	wantResource, knownAud := as.audiences[aud]
	if !knownAud || (form.Has("resource") && form.Get("resource") != wantResource) {
		oauthError(w, http.StatusBadRequest, "invalid_target")
		return
	}
	var scopes []string
	if form.Has("scope") {
		scopes = strings.Split(form.Get("scope"), " ")
		for _, s := range scopes {
			if !slices.Contains(as.scopes, s) {
				oauthError(w, http.StatusBadRequest, "invalid_scope")
				return
			}
		}
	}

	raw := make([]byte, 24)
	_, _ = rand.Read(raw)
	value := base64.RawURLEncoding.EncodeToString(raw)
	as.mu.Lock()
	as.issued[value] = issuedToken{clientID: id, subject: form.Get("subject_token"), audience: aud, resource: form.Get("resource"), scopes: scopes}
	as.mu.Unlock()

	resp := map[string]any{
		"access_token":      value,
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"token_type":        "Bearer",
	}
	if as.expiresIn >= 0 {
		resp["expires_in"] = as.expiresIn
	}
	if !as.omitScope && len(scopes) > 0 {
		resp["scope"] = strings.Join(scopes, " ")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(resp)
}
