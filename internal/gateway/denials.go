package gateway

import (
	"context"
	"time"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// writeDenial writes the audit record of a refusal, unless it repeats one
// written within the window.
func (g *Gateway) writeDenial(ctx context.Context, rec audit.Record) {
	write, rec, closed := g.denials.Admit(rec, g.now())
	for _, c := range closed {
		g.writeAggregate(ctx, c)
	}
	if !write {
		metrics.GatewayAuditAggregated.WithLabelValues(rec.Reason).Inc()
		return
	}
	if err := g.Audit.Write(ctx, rec); err != nil {
		g.denials.Unwrite(rec)
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit record of a refusal could not be written", "reason", rec.Reason)
		metrics.GatewayAuditFailures.WithLabelValues(audit.PhaseDenied).Inc()
	}
}

func (g *Gateway) writeAggregate(ctx context.Context, rec audit.Record) {
	rec.CallID, rec.Time = audit.NewCallID(), g.now()
	if err := g.Audit.Write(ctx, rec); err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit record of repeated refusals could not be written", "reason", rec.Reason)
		metrics.GatewayAuditFailures.WithLabelValues(audit.PhaseDenied).Inc()
	}
}

// FlushDenials writes a record for every window that has passed with
// repeats counted (every window, if all), and reports how many it wrote.
func (g *Gateway) FlushDenials(ctx context.Context, all bool) int {
	closed := g.denials.Close(g.now(), all)
	for _, c := range closed {
		g.writeAggregate(ctx, c)
	}
	return len(closed)
}

// DenialFlusher writes the aggregated records of repeated denials once
// their window has passed, so that a caller who stops after its repeats
// still leaves their count in the audit trail; at shutdown it writes
// every open window's. Run it on every gateway replica.
type DenialFlusher struct {
	Gateway *Gateway
}

// NeedLeaderElection is false: every replica aggregates its own denials.
func (f *DenialFlusher) NeedLeaderElection() bool { return false }

// Start flushes every half window until ctx ends, then flushes all.
func (f *DenialFlusher) Start(ctx context.Context) error {
	tick := time.NewTicker(f.Gateway.denials.Window() / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			flush, cancel := context.WithTimeout(context.Background(), audit.DefaultAuditTimeout)
			defer cancel()
			f.Gateway.FlushDenials(flush, true)
			return nil
		case <-tick.C:
			f.Gateway.FlushDenials(ctx, false)
		}
	}
}
