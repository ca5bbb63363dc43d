package governance

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// Where a call approval stands, as people are shown it.
const (
	CallStatePending  = string(mcpv1alpha1.CallPending)
	CallStateApproved = string(mcpv1alpha1.CallApproved)
	CallStateDenied   = string(mcpv1alpha1.CallDenied)
	// CallStateUsed: approved, and its call was made.
	CallStateUsed = "Used"
	// CallStateExpired: it lapsed without being used; the agent's next call
	// asks again.
	CallStateExpired = "Expired"
)

// CallState is where a McpCallApproval stands at now: Used once its call
// was made, Expired once it lapsed unused, and otherwise Pending, Approved
// or Denied as decided. Only a Pending approval can still be decided.
func CallState(a *mcpv1alpha1.McpCallApproval, now time.Time) string {
	switch {
	case a.Status.ConsumedAt != nil:
		return CallStateUsed
	case !now.Before(a.Spec.ExpiresAt.Time):
		return CallStateExpired
	case !Decided(a):
		return CallStatePending
	}
	return string(a.Spec.Decision)
}

// Decided reports whether a person decided a call approval, whatever has
// happened since.
func Decided(a *mcpv1alpha1.McpCallApproval) bool {
	return a.Spec.Decision != "" && a.Spec.Decision != mcpv1alpha1.CallPending
}

// SpentAnswerPrefix begins the names of the McpCallApprovals the gateway
// creates to mark an answer of the ClientElicitation mode spent: each is
// created undecided and marked used a moment later, and none is a call
// waiting for a person.
const SpentAnswerPrefix = "answer-"

// AwaitsPerson reports whether a is a call waiting for a person at now:
// Pending (CallState), and not the mark of a spent ClientElicitation
// answer. Whether the gateway wrote it is for SealValid to say.
func AwaitsPerson(a *mcpv1alpha1.McpCallApproval, now time.Time) bool {
	return !strings.HasPrefix(a.Name, SpentAnswerPrefix) && CallState(a, now) == CallStatePending
}

// SealMessage is what the seal of an McpCallApproval signs: where the
// object is and the call it is for (for a shared tool, the owner's
// McpServer too), so that an object the gateway did not write is never
// used, counted or announced.
func SealMessage(a *mcpv1alpha1.McpCallApproval) []byte {
	s := a.Spec
	parts := []string{a.Namespace, a.Name, s.Tool, s.Server, s.Caller, s.ArgumentsHash, s.DefinitionHash, strconv.FormatInt(s.ExpiresAt.Unix(), 10)}
	if o := s.OwnerServer; o != nil {
		// A shared call's owner server is sealed too; an approval without
		// one seals what it sealed before the field existed.
		parts = append(parts, "owner", o.Namespace, o.Name, o.UID)
	}
	return []byte(strings.Join(parts, "\x00"))
}

// SealValid reports whether a's seal (spec.seal, base64url without
// padding of HMAC-SHA256 of SealMessage) verifies under one of keys.
// Empty keys verify nothing.
func SealValid(a *mcpv1alpha1.McpCallApproval, keys ...[]byte) bool {
	sig, err := base64.RawURLEncoding.DecodeString(a.Spec.Seal)
	if err != nil || len(sig) == 0 {
		return false
	}
	msg := SealMessage(a)
	for _, k := range keys {
		if len(k) == 0 {
			continue
		}
		m := hmac.New(sha256.New, k)
		m.Write(msg)
		if hmac.Equal(m.Sum(nil), sig) {
			return true
		}
	}
	return false
}
