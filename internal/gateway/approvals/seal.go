package approvals

import (
	"context"
	"encoding/base64"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// Seal is the seal of a under key.
func Seal(key []byte, a *mcpv1alpha1.McpCallApproval) string {
	return base64.RawURLEncoding.EncodeToString(MAC(key, governance.SealMessage(a)))
}

// Sealed reports whether a carries the gateway's seal under its current or
// previous key.
func Sealed(ctx context.Context, keys KeySource, a *mcpv1alpha1.McpCallApproval) bool {
	sig, err := base64.RawURLEncoding.DecodeString(a.Spec.Seal)
	if err != nil {
		return false
	}
	ok, err := VerifyMAC(ctx, keys, governance.SealMessage(a), sig)
	return err == nil && ok
}
