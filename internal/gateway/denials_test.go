package gateway

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
	"github.com/mcp-catalog/operator/internal/metrics"
)

func deniedRecords(s *recordingSink) []audit.Record {
	var out []audit.Record
	for _, r := range s.records() {
		if r.Phase == audit.PhaseDenied {
			out = append(out, r)
		}
	}
	return out
}

// A ServiceAccount over its budget hammers the gateway: the audit sink
// gets the first refusal, then one record with the number of the rest
// once the window has passed, not one record per request.
func TestRepeatedDenialsCannotFloodTheAuditSink(t *testing.T) {
	clk := &manualClock{t: time.Unix(1_800_000_000, 0)}
	sink := &recordingSink{}
	o := completeOptions()
	o.Audit = sink
	o.Clock = clk
	o.Authn = tokenTable{"noisy": noisyIdentity, "quiet": quietIdentity}
	o.Budgets = budget.Budgets{ServiceAccountRate: 0.0001, ServiceAccountBurst: 1}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	aggregated := metrics.GatewayAuditAggregated.WithLabelValues(audit.RefusedRateLimited)
	before := counter(t, aggregated)

	listTools(g, "noisy")
	for i := range 500 {
		if w := listTools(g, "noisy"); w.Code != http.StatusTooManyRequests {
			t.Fatalf("request %d over the budget: %d", i, w.Code)
		}
		clk.add(10 * time.Millisecond)
	}
	if got := deniedRecords(sink); len(got) != 1 || got[0].Repeated != 0 || got[0].CallID == "" {
		t.Fatalf("after 500 refusals in %v: %d denied records %+v, want the first alone", 5*time.Second, len(got), got)
	}
	if got := counter(t, aggregated) - before; got != 499 {
		t.Errorf("aggregated refusals went up by %v, want 499", got)
	}
	// The first denial of another caller is written at once.
	g.budgets = budget.NewBudgeter(budget.Budgets{ServiceAccountRate: 0.0001, ServiceAccountBurst: 1}, clk)
	listTools(g, "quiet")
	listTools(g, "quiet")
	if got := deniedRecords(sink); len(got) != 2 || got[1].Caller != quietIdentity.Username {
		t.Fatalf("another caller's first refusal: records %+v", got)
	}
	// Nothing is flushed before the window ends; after it, the count is.
	if n := g.FlushDenials(context.Background(), false); n != 0 {
		t.Errorf("flushed %d windows before they ended", n)
	}
	clk.add(audit.DefaultDenialWindow)
	if n := g.FlushDenials(context.Background(), false); n != 1 {
		t.Fatalf("flushed %d windows after the window, want 1 (the caller without repeats needs no record)", n)
	}
	got := deniedRecords(sink)
	last := got[len(got)-1]
	if len(got) != 3 || last.Repeated != 499 || last.Caller != noisyIdentity.Username || last.Reason != audit.RefusedRateLimited || last.Detail != budget.BudgetServiceAccount {
		t.Fatalf("the aggregate record: %+v, want 499 repeats of the noisy caller's RateLimited", last)
	}
	// A window ended: the next refusal is written again.
	listTools(g, "noisy")
	listTools(g, "noisy")
	if got := deniedRecords(sink); len(got) != 4 || got[3].Repeated != 0 {
		t.Fatalf("the first refusal of a new window: %+v", got)
	}
}

// failingSink refuses every record.
type failingSink struct{ n int }

func (s *failingSink) Write(context.Context, audit.Record) error {
	s.n++
	return errors.New("sink down")
}

// A first denial whose record could not be written opens no window: the
// next one is tried again rather than counted against a record that does
// not exist.
func TestADenialWhoseRecordFailedIsNotAggregated(t *testing.T) {
	o := completeOptions()
	sink := &failingSink{}
	o.Audit = sink
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.Record{Caller: "system:serviceaccount:a:b", Namespace: "a", Reason: audit.DenyForbidden}
	g.writeDenial(context.Background(), rec)
	g.writeDenial(context.Background(), rec)
	if sink.n != 2 {
		t.Errorf("%d writes tried, want 2", sink.n)
	}
}
