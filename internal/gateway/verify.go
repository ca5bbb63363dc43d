package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// verify authenticates a bearer token. Any failure is a plain 401.
func (g *Gateway) verify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	id, err := g.Authn.Authenticate(ctx, token)
	if err != nil {
		if errors.Is(err, ErrUnauthenticated) && g.unauth != nil && r != nil {
			// A review that could not be made is not the caller's failure.
			g.unauth.failed(r, g.now())
		}
		if errors.Is(err, ErrUnauthenticated) {
			metrics.GatewayRefusals.WithLabelValues(RefusedUnauthenticated).Inc()
		} else {
			logging.FromContext(ctx, logging.Gateway).Error(err, "authenticating a caller failed")
			metrics.GatewayRefusals.WithLabelValues(RefusedDecisionFailed).Inc()
		}
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{
		// Binds the MCP session to this identity: another token cannot use it.
		UserID:     id.UID + "/" + id.Username,
		Expiration: g.now().Add(time.Minute),
		Extra:      map[string]any{"identity": id},
	}, nil
}

func identityOf(ti *auth.TokenInfo) *Identity {
	if ti == nil {
		return nil
	}
	id, _ := ti.Extra["identity"].(*Identity)
	return id
}
