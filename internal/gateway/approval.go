package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// approvalInput is the id of the approval question in a multi-round-trip
// call.
const approvalInput = "approval"

// approvalState binds an approval answer to the exact call it was asked for:
// the caller, the tool and its definition, and the arguments. It travels to
// the client and back signed, so an answer cannot be replayed for another
// call or forged into an approval the gateway never asked for. The nonce
// makes it single-use: one approval, one call, even for a client that
// re-sends the same approved request.
type approvalState struct {
	Caller     string `json:"c"`
	Tool       string `json:"t"`
	Definition string `json:"d"`
	Arguments  string `json:"a"`
	Expires    int64  `json:"e"`
	Nonce      string `json:"n"`
}

// approvalWindow is how long a client has to answer.
const approvalWindow = 5 * time.Minute

type approver struct {
	keys KeySource
	// used holds the nonces of approvals already spent; nil in an approver
	// that only signs and verifies.
	used *nonceSet
}

func (a approver) sign(ctx context.Context, s approvalState) (string, error) {
	ks, err := a.keys.Keys(ctx, false)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(s)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(mac(ks.Current, b)), nil
}

var errBadState = errors.New("the approval state is invalid or expired")

func (a approver) verify(ctx context.Context, token string, want approvalState, now time.Time) error {
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return errBadState
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return errBadState
	}
	if ok, err := verifyMAC(ctx, a.keys, b, got); err != nil || !ok {
		return errors.Join(errBadState, err)
	}
	var s approvalState
	if json.Unmarshal(b, &s) != nil {
		return errBadState
	}
	if now.Unix() > s.Expires {
		return errBadState
	}
	nonce := s.Nonce
	s.Expires, s.Nonce = 0, ""
	want.Expires, want.Nonce = 0, ""
	if s != want || nonce == "" {
		return errBadState
	}
	return nil
}

// spend verifies token like verify and then uses it up: a second spend of
// the same approval fails.
func (a approver) spend(ctx context.Context, token string, want approvalState, now time.Time) error {
	if err := a.verify(ctx, token, want, now); err != nil {
		return err
	}
	body, _, _ := strings.Cut(token, ".")
	b, _ := base64.RawURLEncoding.DecodeString(body)
	var s approvalState
	_ = json.Unmarshal(b, &s)
	return a.used.spend(s.Nonce, s.Expires, now)
}

// newNonce returns a random nonce for an approval state.
func newNonce() string {
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

var errApprovalsFull = errors.New("too many approvals in flight")

func newNonceSet() *nonceSet { return &nonceSet{used: map[string]int64{}} }

func (n *nonceSet) spend(nonce string, expires int64, now time.Time) error {
	if n == nil {
		return errBadState
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.used[nonce]; ok {
		return errBadState
	}
	if len(n.used) >= maxSpentApprovals {
		for k, exp := range n.used {
			if now.Unix() > exp {
				delete(n.used, k)
			}
		}
		if len(n.used) >= maxSpentApprovals {
			return errApprovalsFull
		}
	}
	n.used[nonce] = expires
	return nil
}

// approvalQuestion is what the client shows a human.
func approvalQuestion(localName, server, class string) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode: "form",
		Message: "The agent wants to call the tool " + localName + " of the MCP server " + server +
			" (data class " + class + "). Every call is treated as a write that cannot be undone. Approve this call?",
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Approve this call", "description": "true to let the call go ahead"},
			},
			"required": []string{"approve"},
		},
	}
}

// approved reads a client's answer: only an accepted form with approve true
// approves.
func approved(resp mcp.InputResponse) bool {
	r, ok := resp.(*mcp.ElicitResult)
	if !ok || r.Action != "accept" {
		return false
	}
	v, ok := r.Content["approve"].(bool)
	return ok && v
}
