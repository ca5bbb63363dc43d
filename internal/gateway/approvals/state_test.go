package approvals

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func keyed(k string) Approver { return Approver{keys: StaticKeys{Current: []byte(k)}} }

func withNonces(a Approver) Approver { a.used = newNonceSet(); return a }

// signT signs s or fails the test.
func (a Approver) signT(t *testing.T, s State) string {
	t.Helper()
	tok, err := a.Sign(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var stateNow = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

func sampleState() State {
	return State{
		Caller:     "uid-1/system:serviceaccount:team:bot",
		Tool:       "team/docs.echo",
		Definition: "sha256:" + strings.Repeat("a", 64),
		Arguments:  "sha256:" + strings.Repeat("b", 64),
		Expires:    stateNow.Add(StateWindow).Unix(),
		Nonce:      NewNonce(),
	}
}

func TestApproverVerifiesTheStateItSigned(t *testing.T) {
	a := keyed("k1")
	s := sampleState()
	if err := a.Verify(ctx, a.signT(t, s), s, stateNow); err != nil {
		t.Fatalf("verify of a fresh state: %v", err)
	}
	// The expiry and nonce are part of the signed state, not of what the
	// call must match: a retry computes its own state without them.
	want := s
	want.Expires, want.Nonce = 0, ""
	if err := a.Verify(ctx, a.signT(t, s), want, stateNow); err != nil {
		t.Fatalf("verify against the call's state: %v", err)
	}
}

func TestApproverRejectsATamperedOrForeignState(t *testing.T) {
	a := keyed("k1")
	s := sampleState()
	token := a.signT(t, s)
	body, sig, _ := strings.Cut(token, ".")

	// Another caller's state, carrying this state's signature.
	other := s
	other.Caller = "uid-2/system:serviceaccount:team:evil"
	otherBody, _, _ := strings.Cut(a.signT(t, other), ".")

	rawSig, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		t.Fatal(err)
	}
	rawSig[0] ^= 1

	for name, tok := range map[string]string{
		"empty":                         "",
		"no signature":                  body,
		"body of another state":         otherBody + "." + sig,
		"a flipped signature bit":       body + "." + base64.RawURLEncoding.EncodeToString(rawSig),
		"signed with another key":       keyed("k2").signT(t, s),
		"not base64":                    "!!!." + sig,
		"signature not base64":          body + ".!!!",
		"a signed body that is no JSON": signRaw(a, []byte("not json")),
	} {
		if err := a.Verify(ctx, tok, s, stateNow); err == nil {
			t.Errorf("%s: verify accepted it", name)
		}
	}
}

// signRaw signs arbitrary bytes with the Approver's key, as sign does
// for the JSON of a state.
func signRaw(a Approver, b []byte) string {
	ks, _ := a.keys.Keys(ctx, false)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(MAC(ks.Current, b))
}

func TestApproverRejectsAnExpiredState(t *testing.T) {
	a := keyed("k1")
	s := sampleState()
	tok := a.signT(t, s)
	if err := a.Verify(ctx, tok, s, time.Unix(s.Expires, 0)); err != nil {
		t.Errorf("at the expiry second: %v", err)
	}
	if err := a.Verify(ctx, tok, s, time.Unix(s.Expires+1, 0)); err == nil {
		t.Error("a second after expiry: accepted")
	}
}

func TestApproverRejectsTheStateOfAnotherCall(t *testing.T) {
	a := keyed("k1")
	s := sampleState()
	tok := a.signT(t, s)
	for name, change := range map[string]func(*State){
		"another caller":     func(x *State) { x.Caller = "uid-9/system:serviceaccount:team:bot" },
		"another tool":       func(x *State) { x.Tool = "team/docs.fail" },
		"another definition": func(x *State) { x.Definition = "sha256:" + strings.Repeat("c", 64) },
		"other arguments":    func(x *State) { x.Arguments = "sha256:" + strings.Repeat("d", 64) },
	} {
		want := s
		change(&want)
		if err := a.Verify(ctx, tok, want, stateNow); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestApproverRejectsAStateWithoutNonce(t *testing.T) {
	a := keyed("k1")
	s := sampleState()
	s.Nonce = ""
	if err := a.Verify(ctx, a.signT(t, s), s, stateNow); err == nil {
		t.Error("a state without a nonce was accepted")
	}
}

func TestApproverSpendsEachApprovalOnce(t *testing.T) {
	a := withNonces(keyed("k1"))
	s := sampleState()
	tok := a.signT(t, s)
	if err := a.Spend(ctx, tok, s, stateNow); err != nil {
		t.Fatalf("first spend: %v", err)
	}
	if err := a.Spend(ctx, tok, s, stateNow); err == nil {
		t.Fatal("the same approval was spent twice")
	}
	// Another approval of an identical call is its own approval.
	s2 := s
	s2.Nonce = NewNonce()
	if err := a.Spend(ctx, a.signT(t, s2), s2, stateNow); err != nil {
		t.Fatalf("a second approval of the same call: %v", err)
	}
	// A forged token is refused before anything is spent.
	if err := a.Spend(ctx, "forged", s, stateNow); err == nil {
		t.Fatal("a forged token was spent")
	}
	if err := (keyed("k1")).Spend(ctx, a.signT(t, s2), s2, stateNow); err == nil {
		t.Fatal("an Approver without a nonce set spent an approval")
	}
}

func TestNonceSetForgetsExpiredApprovalsAndRefusesWhenFullOfLiveOnes(t *testing.T) {
	n := newNonceSet()
	now := time.Unix(1000, 0)
	for i := range maxSpentApprovals {
		exp := now.Unix() + 300
		if i%2 == 0 {
			exp = now.Unix() + 1
		}
		if err := n.spend(strconv.Itoa(i), exp, now); err != nil {
			t.Fatal(err)
		}
	}
	later := now.Add(2 * time.Second)
	if err := n.spend("new", later.Unix()+300, later); err != nil {
		t.Fatalf("with expired entries to drop: %v", err)
	}
	if err := n.spend("1", later.Unix()+300, later); err == nil {
		t.Error("a live spent approval was forgotten")
	}
	for i := range maxSpentApprovals / 2 {
		_ = n.spend("more"+strconv.Itoa(i), later.Unix()+300, later)
	}
	if err := n.spend("one-too-many", later.Unix()+300, later); !errors.Is(err, ErrApprovalsFull) {
		t.Errorf("full of live approvals: %v, want ErrApprovalsFull", err)
	}
}

func TestApproverAcceptsStateSignedWithThePreviousKey(t *testing.T) {
	s := sampleState()
	tok := keyed("old").signT(t, s)
	rotated := Approver{keys: StaticKeys{Current: []byte("new"), Previous: []byte("old")}}
	if err := rotated.Verify(ctx, tok, s, stateNow); err != nil {
		t.Fatalf("state signed before a rotation was refused: %v", err)
	}
	if err := keyed("new").Verify(ctx, tok, s, stateNow); err == nil {
		t.Fatal("state signed with a key no longer kept was accepted")
	}
	if tok2 := rotated.signT(t, s); keyed("new").Verify(ctx, tok2, s, stateNow) != nil {
		t.Fatal("a rotated Approver does not sign with its current key")
	}
}

var ctx = context.Background()
