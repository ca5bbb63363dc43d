package personauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/internal/gateway/approvals"
)

var (
	keyA = []byte(strings.Repeat("a", 32))
	keyB = []byte(strings.Repeat("b", 32))
)

func testState(now time.Time) state {
	return state{Kind: kindUpstream, Namespace: "team-a", Server: "records", ServerUID: "uid-1", User: "alice@example.com",
		Issuer: "https://as.example.com", ClientID: "gw", Nonce: newNonce(), Expires: now.Add(DefaultStateTTL).Unix(),
		Flow: testFlow, Browser: browserHash(testCookie)}
}

func TestStateRoundTrip(t *testing.T) {
	ctx, now := context.Background(), time.Unix(1_800_000_000, 0)
	s := signer{keys: approvals.StaticKeys{Current: keyA}}
	want := testState(now)
	tok, verifier, err := s.sign(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if len(verifier) != 43 || strings.ContainsAny(verifier, "+/=") {
		t.Fatalf("the PKCE verifier must be 43 unreserved characters, got %d", len(verifier))
	}
	if strings.Contains(tok, verifier) {
		t.Fatal("the state carries the PKCE verifier")
	}
	got, v2, err := s.verify(ctx, tok, now)
	if err != nil || got != want || v2 != verifier {
		t.Fatalf("verify = %+v, %v; want the state and the same verifier", got, err)
	}
	// After a rotation the link made before still verifies, with its
	// verifier.
	rotated := signer{keys: approvals.StaticKeys{Current: keyB, Previous: keyA}}
	if _, v3, err := rotated.verify(ctx, tok, now); err != nil || v3 != verifier {
		t.Fatalf("after a rotation: %v", err)
	}
}

// An attacker who has seen a consent link changes whom or what it binds;
// or uses it late; or presents something else the gateway signed.
func TestStateRefusesWhatTheGatewayDidNotSign(t *testing.T) {
	ctx, now := context.Background(), time.Unix(1_800_000_000, 0)
	keys := approvals.StaticKeys{Current: keyA}
	s := signer{keys: keys}
	tok, _, err := s.sign(ctx, testState(now))
	if err != nil {
		t.Fatal(err)
	}
	payload, sig, _ := strings.Cut(tok, ".")
	body, _ := base64.RawURLEncoding.DecodeString(payload)
	var st state
	_ = json.Unmarshal(body, &st)
	st.User = "mallory@example.com"
	forged, _ := json.Marshal(st)

	// A token in the format, signed with the approval key itself: without
	// the derived key, an approval seal or answer would pass as a state.
	raw := func() string {
		m := hmac.New(sha256.New, keyA)
		m.Write([]byte("state"))
		m.Write([]byte{0})
		m.Write([]byte(payload))
		m.Write([]byte{0})
		return payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}()
	answer, err := approvals.NewApprover(keys).Sign(ctx, approvals.State{Caller: "u/alice", Expires: now.Add(time.Minute).Unix(), Nonce: "n"})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		tok string
		at  time.Time
	}{
		"another person":             {base64.RawURLEncoding.EncodeToString(forged) + "." + sig, now},
		"expired":                    {tok, now.Add(DefaultStateTTL + time.Second)},
		"no signature":               {payload, now},
		"signed by the approval key": {raw, now},
		"an approval answer token":   {answer, now},
		"oversized":                  {strings.Repeat("x", maxStateBytes+1), now},
		"empty":                      {"", now},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := s.verify(ctx, c.tok, c.at); !errors.Is(err, ErrBadState) {
				t.Fatalf("verify = %v, want ErrBadState", err)
			}
		})
	}
	other := signer{keys: approvals.StaticKeys{Current: keyB}}
	if _, _, err := other.verify(ctx, tok, now); !errors.Is(err, ErrBadState) {
		t.Fatalf("another gateway's key: %v", err)
	}
}

func TestSecretNamesDifferPerServerAndPerson(t *testing.T) {
	names := map[string]bool{}
	for _, sv := range []string{"records", "tickets"} {
		for _, u := range []string{"alice", "bob", "records"} {
			n := SecretName(sv, u)
			if names[n] || len(n) > 63 {
				t.Fatalf("name %q repeats or is too long", n)
			}
			names[n] = true
		}
	}
	// The separator keeps ("ab","c") and ("a","bc") apart.
	if SecretName("ab", "c") == SecretName("a", "bc") {
		t.Fatal("names collide across the separator")
	}
}
