package authn

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// A fingerprint is the token's HMAC-SHA256 under the fingerprinter's key,
// however long the token and however the pooled hashers are shared.
func TestFingerprintIsTheTokensHMAC(t *testing.T) {
	f := newFingerprinter()
	want := func(token string) fingerprint {
		m := hmac.New(sha256.New, f.key)
		m.Write([]byte(token))
		var fp fingerprint
		copy(fp[:], m.Sum(nil))
		return fp
	}
	long := strings.Repeat("a", 1500)
	tokens := []string{"", "x", strings.Repeat("b", 511), strings.Repeat("b", 512), strings.Repeat("b", 513), long, long + "b", long[:1499] + "c"}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				for _, tok := range tokens {
					if got := f.of(tok); got != want(tok) {
						t.Errorf("fingerprint of a %d-byte token is not its HMAC", len(tok))
					}
				}
			}
		})
	}
	wg.Wait()
	if newFingerprinter().of("x") == f.of("x") {
		t.Error("two fingerprinters share a key")
	}
}

// The subject key an authenticator stores on an identity is the one its
// fields give, so an authorisation answer cached under it is the answer
// for those fields.
func TestAnIdentitysStoredSubjectKeyIsItsFields(t *testing.T) {
	tr := &authenticationv1.TokenReview{Status: authenticationv1.TokenReviewStatus{
		Authenticated: true, Audiences: []string{"gw"},
		User: authenticationv1.UserInfo{Username: "system:serviceaccount:team-a:bot", UID: "u-1",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-a"},
			Extra:  map[string]authenticationv1.ExtraValue{"b": {"2"}, "a": {"1", ""}}},
	}}
	id := identityFrom(tr, "gw")
	if id == nil || id.subject == "" {
		t.Fatal("the reviewed identity carries no subject key")
	}
	fields := *id
	fields.subject = ""
	if id.SubjectKey() != fields.SubjectKey() {
		t.Errorf("stored %q, fields give %q", id.SubjectKey(), fields.SubjectKey())
	}
	other := fields
	other.Groups = []string{"system:serviceaccounts"}
	if other.SubjectKey() == id.SubjectKey() {
		t.Error("different groups share a subject key")
	}
}
