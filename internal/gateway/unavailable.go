package gateway

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// undecidedMessage answers a request whose tools could not be decided.
const undecidedMessage = "the gateway could not decide which tools the caller may use now (the Kubernetes API is unavailable); try again"

// undecidedServer stands in where the tools a caller may use cannot be
// decided (a SubjectAccessReview or a read failed; the error is logged).
// Every request on it, initialize included, is answered with a JSON-RPC
// error saying so: no session begins that offers nothing for its whole
// life, and a call is not answered "unknown tool".
func (g *Gateway) undecidedServer() *sdk.Server {
	s := g.bareServer()
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			metrics.GatewayRefusals.WithLabelValues(audit.RefusedDecisionFailed).Inc()
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: undecidedMessage}
		}
	})
	return s
}
