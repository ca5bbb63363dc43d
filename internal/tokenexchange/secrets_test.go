package tokenexchange_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-catalog/operator/internal/secret"
	te "github.com/mcp-catalog/operator/internal/tokenexchange"
)

// The secrets of this test are distinctive strings; the endpoint echoes all
// of them back in every place a careless client might copy from (the
// error_description, an HTML page, a malformed success body, a header), and
// the test then searches every error string and every formatted result.
const (
	leakClientSecret = "CLIENT-SECRET-b7e1c0ffee"
	leakSubjectToken = "SUBJECT-TOKEN-4d2a9f00d"
	leakIssuedToken  = "ISSUED-TOKEN-91c3beef"
)

var leakSecrets = []string{leakClientSecret, leakSubjectToken, leakIssuedToken}

// formats is every way a value might be printed.
var formats = []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X"}

func assertNoSecrets(t *testing.T, what string, v any) {
	t.Helper()
	for _, l := range leaks(v) {
		t.Errorf("%s: %s", what, l)
	}
}

// leaks prints v every way it can be printed and reports each output that
// contains one of the secrets.
func leaks(v any) []string {
	var found []string
	var outs []string
	for _, f := range formats {
		outs = append(outs, fmt.Sprintf(f, v))
	}
	if j, err := json.Marshal(v); err == nil {
		outs = append(outs, string(j))
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "value", v)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "value", v)
	outs = append(outs, buf.String())
	if err, ok := v.(error); ok {
		for e := err; e != nil; e = errors.Unwrap(e) {
			outs = append(outs, e.Error())
		}
	}
	for _, out := range outs {
		for _, s := range leakSecrets {
			// %x of a string hex-encodes it, so search for that too.
			if strings.Contains(out, s) || strings.Contains(strings.ToLower(out), fmt.Sprintf("%x", s)) {
				found = append(found, fmt.Sprintf("secret %s... appears in output %q", s[:6], out))
			}
		}
	}
	return found
}

func echoAll(body string) string {
	return strings.NewReplacer("$CS", leakClientSecret, "$ST", leakSubjectToken, "$IT", leakIssuedToken).Replace(body)
}

func TestSecretsNeverInErrorsOrOutput(t *testing.T) {
	html := echoAll(`<html>client secret $CS, subject $ST, token $IT</html>`)
	oauthErr := echoAll(`{"error":"invalid_grant","error_description":"subject $ST with secret $CS","error_uri":"https://as/$IT"}`)
	unknownErr := echoAll(`{"error":"$ST","error_description":"$CS"}`)
	badType := echoAll(`{"access_token":"$IT","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"$ST"}`)
	badIssued := echoAll(`{"access_token":"$IT","issued_token_type":"$ST","token_type":"Bearer"}`)
	badExpiry := echoAll(`{"access_token":"$IT","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":"$CS"}`)
	badScope := echoAll(`{"access_token":"$IT","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","scope":"records.read $ST"}`)
	good := echoAll(`{"access_token":"$IT","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":60,"scope":"records.read"}`)

	scenarios := []struct {
		name    string
		respond func(http.ResponseWriter, *http.Request)
		mut     func(*te.Request)
		success bool
	}{
		{"oauth error echoing secrets", raw(400, "application/json", oauthErr), nil, false},
		{"unknown code echoing secrets", raw(401, "application/json", unknownErr), nil, false},
		{"html 500 echoing secrets", raw(500, "text/html", html), nil, false},
		{"html 200 echoing secrets", raw(200, "text/html", html), nil, false},
		{"html 400 echoing secrets", raw(400, "text/html", html), nil, false},
		{"bad token_type", raw(200, "application/json", badType), nil, false},
		{"bad issued_token_type", raw(200, "application/json", badIssued), nil, false},
		{"bad expires_in", raw(200, "application/json", badExpiry), nil, false},
		{"scope widened by a secret", raw(200, "application/json", badScope), nil, false},
		{"redirect to a secret location", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://127.0.0.1:1/"+leakSubjectToken+"?s="+leakClientSecret, http.StatusTemporaryRedirect)
		}, nil, false},
		{"policy refusal", nil, func(r *te.Request) { r.Audience = "elsewhere" }, false},
		{"unreachable", nil, func(r *te.Request) { r.TokenEndpoint = "https://127.0.0.1:1/oauth/token" }, false},
		{"plain http endpoint", nil, func(r *te.Request) { r.TokenEndpoint = strings.Replace(r.TokenEndpoint, "https", "http", 1) }, false},
		{"success", raw(200, "application/json", good), nil, true},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			as := newTestAS(t)
			as.respond = sc.respond
			c := newClient(t, as, te.Options{})
			req := baseRequest(as)
			req.ClientSecret = secret.New(leakClientSecret)
			req.SubjectToken = secret.New(leakSubjectToken)
			if sc.mut != nil {
				sc.mut(&req)
			}
			tok, err := c.Exchange(context.Background(), req, profileAllowed, actorAllowed)
			if sc.success != (err == nil) {
				t.Fatalf("err = %v, success wanted %v", err, sc.success)
			}
			if err != nil {
				assertNoSecrets(t, "error", err)
			}
			assertNoSecrets(t, "token", tok)
			assertNoSecrets(t, "token pointer", &tok)
			assertNoSecrets(t, "request", req)
			if sc.success {
				// The value is really there; only printing hides it.
				if tok.Value.Reveal() != leakIssuedToken {
					t.Fatalf("token value lost")
				}
				cred, err := tok.Credential()
				if err != nil {
					t.Fatal(err)
				}
				assertNoSecrets(t, "credential", cred)
			}
		})
	}
}

func TestSecretSearchWouldNoticeALeak(t *testing.T) {
	// Guards the guard: the search above must be able to fail.
	if len(leaks(fmt.Errorf("oops %s", leakSubjectToken))) == 0 {
		t.Error("a secret in an error string went unnoticed")
	}
	if len(leaks(fmt.Sprintf("%x", leakIssuedToken))) == 0 {
		t.Error("a hex-encoded secret went unnoticed")
	}
	if len(leaks(struct{ V string }{leakClientSecret})) == 0 {
		t.Error("a secret in a struct field went unnoticed")
	}
	if l := leaks(secret.New(leakClientSecret)); len(l) != 0 {
		t.Errorf("secret.Secret printed its value: %v", l)
	}
}
