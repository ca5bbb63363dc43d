package approvals

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"
)

// State binds an approval answer to the exact call it was asked for:
// the caller, the tool and its definition, and the arguments. It travels to
// the client and back signed, so an answer cannot be replayed for another
// call or forged into an approval the gateway never asked for. The nonce
// makes it single-use: one approval, one call, even for a client that
// re-sends the same approved request.
type State struct {
	Caller     string `json:"c"`
	Tool       string `json:"t"`
	Definition string `json:"d"`
	Arguments  string `json:"a"`
	Expires    int64  `json:"e"`
	Nonce      string `json:"n"`
}

// StateWindow is how long a client has to answer.
const StateWindow = 5 * time.Minute

type Approver struct {
	keys KeySource
	// used holds the nonces of approvals already spent; nil in an Approver
	// that only signs and verifies.
	used *nonceSet
}

// NewApprover signs and verifies state with keys and spends each state
// once.
func NewApprover(keys KeySource) Approver { return Approver{keys: keys, used: newNonceSet()} }

func (a Approver) Sign(ctx context.Context, s State) (string, error) {
	ks, err := a.keys.Keys(ctx, false)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(s)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(MAC(ks.Current, b)), nil
}

var ErrBadState = errors.New("the approval state is invalid or expired")

func (a Approver) Verify(ctx context.Context, token string, want State, now time.Time) error {
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return ErrBadState
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return ErrBadState
	}
	if ok, err := VerifyMAC(ctx, a.keys, b, got); err != nil || !ok {
		return errors.Join(ErrBadState, err)
	}
	var s State
	if json.Unmarshal(b, &s) != nil {
		return ErrBadState
	}
	if now.Unix() > s.Expires {
		return ErrBadState
	}
	nonce := s.Nonce
	s.Expires, s.Nonce = 0, ""
	want.Expires, want.Nonce = 0, ""
	if s != want || nonce == "" {
		return ErrBadState
	}
	return nil
}

// Verified verifies token like verify and returns the state it carries,
// nonce and expiry included.
func (a Approver) Verified(ctx context.Context, token string, want State, now time.Time) (State, error) {
	if err := a.Verify(ctx, token, want, now); err != nil {
		return State{}, err
	}
	body, _, _ := strings.Cut(token, ".")
	b, _ := base64.RawURLEncoding.DecodeString(body)
	var s State
	_ = json.Unmarshal(b, &s)
	return s, nil
}

// Spend verifies token like verify and then uses it up in this process's
// memory: a second spend of the same approval here fails.
func (a Approver) Spend(ctx context.Context, token string, want State, now time.Time) error {
	s, err := a.Verified(ctx, token, want, now)
	if err != nil {
		return err
	}
	return a.used.spend(s.Nonce, s.Expires, now)
}

// NewNonce returns a random nonce for an approval state.
func NewNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// nonceSet remembers spent approvals until they expire. It is bounded: when
// it is full of approvals that have not expired yet, it refuses to spend
// another (the caller is asked again) rather than forget one, which would
// let it be spent twice.
type nonceSet struct {
	mu   sync.Mutex
	used map[string]int64 // nonce → expiry (Unix seconds)
}

const maxSpentApprovals = 10000

var ErrApprovalsFull = errors.New("too many approvals in flight")

func newNonceSet() *nonceSet { return &nonceSet{used: map[string]int64{}} }

func (n *nonceSet) spend(nonce string, expires int64, now time.Time) error {
	if n == nil {
		return ErrBadState
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.used[nonce]; ok {
		return ErrBadState
	}
	if len(n.used) >= maxSpentApprovals {
		for k, exp := range n.used {
			if now.Unix() > exp {
				delete(n.used, k)
			}
		}
		if len(n.used) >= maxSpentApprovals {
			return ErrApprovalsFull
		}
	}
	n.used[nonce] = expires
	return nil
}
