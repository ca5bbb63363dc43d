package integration_test

import (
	"context"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("Observability", func() {
	const echo = mcpserver.ToolEcho

	It("counts a call under its tool and traces it through the manager's gateway, continuing the agent's trace and linking the upstream's", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{Stateless: true}, []string{echo})
		a := newAgent(ns, "bot")
		a.grant(docs.object(echo))
		a.ceiling(mcpv1alpha1.DataClassInternal)
		cs := a.connect(nil, modernEra)

		agentTrace, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{
			Name: docs.local(echo), Arguments: map[string]any{"text": "hello"},
			Meta: sdk.Meta{"traceparent": "00-" + agentTrace.String() + "-b7ad6b7169203331-01"},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), text(res))

		var server sdktrace.ReadOnlySpan
		for _, s := range spans.Ended() {
			if s.SpanContext().TraceID() == agentTrace && s.SpanKind() == trace.SpanKindServer {
				server = s
			}
		}
		Expect(server).NotTo(BeNil(), "no server span in the agent's trace")
		var client sdktrace.ReadOnlySpan
		for _, s := range spans.Ended() {
			if s.SpanKind() == trace.SpanKindClient && len(s.Links()) == 1 && s.Links()[0].SpanContext.Equal(server.SpanContext()) {
				client = s
			}
		}
		Expect(client).NotTo(BeNil(), "no client span linked to the server span")
		Expect(server.Name()).To(Equal("tools/call " + docs.local(echo)))
		Expect(client.SpanContext().TraceID()).NotTo(Equal(agentTrace), "the upstream call continues the agent's trace")
		Expect(client.Parent().IsValid()).To(BeFalse())
		Expect(server.Attributes()).To(ContainElements(
			attribute.String("mcp_catalog.tool", docs.object(echo)),
			attribute.String("mcp_catalog.outcome", audit.OutcomeSucceeded),
		))

		var m dto.Metric
		Expect(metrics.GatewayCalls.WithLabelValues(ns, docs.name, docs.object(echo), audit.OutcomeSucceeded, "").Write(&m)).To(Succeed())
		Expect(m.GetCounter().GetValue()).To(Equal(1.0))
		m.Reset()
		Expect(metrics.GatewayUpstreamDuration.WithLabelValues(ns, docs.name, docs.object(echo)).(interface{ Write(*dto.Metric) error }).Write(&m)).To(Succeed())
		Expect(m.GetHistogram().GetSampleCount()).To(Equal(uint64(1)))
	})
})
