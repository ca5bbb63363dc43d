package approvals

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// sealMessage is what an approval's seal signs: where the object is and
// the call it is for, so that an object the gateway did not write is never
// used, nor counted.
func sealMessage(a *mcpv1alpha1.McpCallApproval) []byte {
	s := a.Spec
	return []byte(strings.Join([]string{a.Namespace, a.Name, s.Tool, s.Server, s.Caller, s.ArgumentsHash, s.DefinitionHash, strconv.FormatInt(s.ExpiresAt.Unix(), 10)}, "\x00"))
}

// Seal is the seal of a under key.
func Seal(key []byte, a *mcpv1alpha1.McpCallApproval) string {
	return base64.RawURLEncoding.EncodeToString(MAC(key, sealMessage(a)))
}

// Sealed reports whether a carries the gateway's seal under its current or
// previous key.
func Sealed(ctx context.Context, keys KeySource, a *mcpv1alpha1.McpCallApproval) bool {
	sig, err := base64.RawURLEncoding.DecodeString(a.Spec.Seal)
	if err != nil {
		return false
	}
	ok, err := VerifyMAC(ctx, keys, sealMessage(a), sig)
	return err == nil && ok
}
