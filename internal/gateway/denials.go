package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// DefaultDenialWindow is how long repeats of a denial are aggregated into
// one record.
const DefaultDenialWindow = time.Minute

// maxDenialWindows bounds the open windows. Keys are made of what review
// and the cache vouch for (an identity, an McpTool that exists, a fixed
// reason), not of what a caller sends; should they still fill the table,
// a denial without room is written on its own, as before.
const maxDenialWindows = 10000

// denialKey is what makes two denials the same: who, which tool, why. The
// name a caller sent and the arguments are left out, so a caller cannot
// make each denial new by varying them.
type denialKey struct {
	caller, namespace, tool, server, dataClass, reason, detail string
	// approvalName tells apart calls waiting on different McpCallApprovals
	// (objects the gateway made, not names a caller sent).
	approvalName string
	// serverNamespace and sharedServer name a shared tool's owner and the
	// caller's McpSharedServer, so that an aggregate names both namespaces.
	serverNamespace, sharedServer string
}

func keyOf(r audit.Record) denialKey {
	return denialKey{r.Caller, r.Namespace, r.Tool, r.Server, r.DataClass, r.Reason, r.Detail, r.ApprovalName, r.ServerNamespace, r.SharedServer}
}

// denialWindow is an open window: since start, repeats denials of its key
// were not written.
type denialWindow struct {
	start   time.Time
	repeats int
}

// denials aggregates repeated identical denials, so that a caller repeating
// a refused request cannot write to the audit sink as fast as it sends.
// The first denial of a key is always written, and opens a window; repeats
// within it are counted, not written; once it has passed, one record of
// the key carries their number (Record.Repeated), written by the next
// denial of the key or by the flusher, whichever comes first.
type denials struct {
	window time.Duration
	max    int

	mu   sync.Mutex
	open map[denialKey]*denialWindow
}

func newDenials(window time.Duration) *denials {
	if window <= 0 {
		window = DefaultDenialWindow
	}
	return &denials{window: window, max: maxDenialWindows, open: map[denialKey]*denialWindow{}}
}

// admit decides whether rec is written. A record to write carries, in
// Repeated, the repeats of the window it closes; closed are records of
// other keys whose windows have passed, to be written too.
func (d *denials) admit(rec audit.Record, now time.Time) (write bool, out audit.Record, closed []audit.Record) {
	k := keyOf(rec)
	d.mu.Lock()
	defer d.mu.Unlock()
	w, ok := d.open[k]
	if ok && now.Sub(w.start) < d.window {
		w.repeats++
		return false, rec, nil
	}
	if !ok && len(d.open) >= d.max {
		closed = d.closeLocked(now, false)
		if len(d.open) >= d.max {
			return true, rec, closed
		}
	}
	if ok {
		rec.Repeated = w.repeats
	}
	d.open[k] = &denialWindow{start: now}
	return true, rec, closed
}

// unwrite forgets the window a record opened whose write failed, so that
// the next denial of its key is written.
func (d *denials) unwrite(rec audit.Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.open, keyOf(rec))
}

// closeLocked removes windows that have passed (all, if every) and returns
// a record for each that counted repeats; d.mu is held.
func (d *denials) closeLocked(now time.Time, every bool) []audit.Record {
	var out []audit.Record
	for k, w := range d.open {
		if !every && now.Sub(w.start) < d.window {
			continue
		}
		delete(d.open, k)
		if w.repeats > 0 {
			out = append(out, audit.Record{
				Phase: audit.PhaseDenied, Decision: "Denied", Caller: k.caller, Namespace: k.namespace, Tool: k.tool,
				Server: k.server, DataClass: k.dataClass, Reason: k.reason, Detail: k.detail,
				ApprovalName: k.approvalName, Repeated: w.repeats,
				ServerNamespace: k.serverNamespace, SharedServer: k.sharedServer,
			})
		}
	}
	return out
}

// writeDenial writes the audit record of a refusal, unless it repeats one
// written within the window.
func (g *Gateway) writeDenial(ctx context.Context, rec audit.Record) {
	write, rec, closed := g.denials.admit(rec, g.now())
	for _, c := range closed {
		g.writeAggregate(ctx, c)
	}
	if !write {
		metrics.GatewayAuditAggregated.WithLabelValues(rec.Reason).Inc()
		return
	}
	if err := g.Audit.Write(ctx, rec); err != nil {
		g.denials.unwrite(rec)
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
	g.denials.mu.Lock()
	closed := g.denials.closeLocked(g.now(), all)
	g.denials.mu.Unlock()
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
	tick := time.NewTicker(f.Gateway.denials.window / 2)
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
