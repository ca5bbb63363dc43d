package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
	"github.com/mcp-catalog/operator/internal/metrics"
)

var (
	noisyIdentity = &authn.Identity{Username: "system:serviceaccount:noisy:bot", Namespace: "noisy", ServiceAccount: "bot"}
	quietIdentity = &authn.Identity{Username: "system:serviceaccount:quiet:bot", Namespace: "quiet", ServiceAccount: "bot"}
)

// recordingSink keeps the records written to it.
type recordingSink struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (s *recordingSink) Write(_ context.Context, r audit.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, r)
	return nil
}

func (s *recordingSink) records() []audit.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]audit.Record(nil), s.recs...)
}

// countingReader counts every read the gateway makes.
type countingReader struct {
	client.Reader
	n atomic.Int64
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.n.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.n.Add(1)
	return c.Reader.List(ctx, list, opts...)
}

func listTools(g *Gateway, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
	r.RemoteAddr = meshAddr
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", modernProtocol)
	r.Header.Set("Mcp-Method", "tools/list")
	w := httptest.NewRecorder()
	g.Handler().ServeHTTP(w, r)
	return w
}

// One ServiceAccount spends its request budget; its next request is
// refused with 429 before the gateway lists a tool, audited once and
// counted, while a ServiceAccount of another namespace is served at once.
func TestAServiceAccountOverItsRateBudgetDoesNotSlowAnother(t *testing.T) {
	sink := &recordingSink{}
	reader := &countingReader{Reader: completeOptions().Reader}
	o := completeOptions()
	o.Reader = reader
	o.Audit = sink
	o.Authn = tokenTable{"noisy": noisyIdentity, "quiet": quietIdentity}
	o.Budgets = budget.Budgets{ServiceAccountRate: 0.01, ServiceAccountBurst: 3}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	refusedRate := metrics.GatewayRefusals.WithLabelValues(audit.RefusedRateLimited)
	budgetRate := metrics.GatewayBudgetRefusals.WithLabelValues("noisy", budget.BudgetServiceAccount, audit.RefusedRateLimited)
	before, beforeBudget := counter(t, refusedRate), counter(t, budgetRate)

	for i := range 3 {
		if w := listTools(g, "noisy"); w.Code != http.StatusOK {
			t.Fatalf("request %d within the budget: %d %s", i, w.Code, w.Body)
		}
	}
	reads := reader.n.Load()
	if reads == 0 {
		t.Fatal("a tool list read nothing: the test cannot tell work from none")
	}
	w := listTools(g, "noisy")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("the request past the budget: %d, want 429", w.Code)
	}
	if secs, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || secs < 1 {
		t.Errorf("Retry-After %q, want a positive number of seconds", w.Header().Get("Retry-After"))
	}
	var body struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Reason, Scope string
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.JSONRPC != "2.0" || body.ID != nil || body.Error.Code == 0 {
		t.Errorf("the 429 body is not a JSON-RPC error response without an id: %s (%v)", w.Body, err)
	}
	if body.Error.Data.Reason != audit.RefusedRateLimited || body.Error.Data.Scope != budget.BudgetServiceAccount {
		t.Errorf("the error data: %+v", body.Error.Data)
	}
	if n := reader.n.Load(); n != reads {
		t.Errorf("the refused request made %d reads; a budget is checked before any work", n-reads)
	}
	if got := counter(t, refusedRate) - before; got != 1 {
		t.Errorf("refusals{RateLimited} went up by %v, want 1", got)
	}
	if got := counter(t, budgetRate) - beforeBudget; got != 1 {
		t.Errorf("budget refusals{noisy, ServiceAccount, RateLimited} went up by %v, want 1", got)
	}
	var denied []audit.Record
	for _, r := range sink.records() {
		if r.Phase == audit.PhaseDenied {
			denied = append(denied, r)
		}
	}
	if len(denied) != 1 || denied[0].Caller != noisyIdentity.Username || denied[0].Namespace != "noisy" ||
		denied[0].Reason != audit.RefusedRateLimited || denied[0].Detail != budget.BudgetServiceAccount {
		t.Errorf("audit records of the refusal: %+v, want one naming the caller, RateLimited and ServiceAccount", denied)
	}

	if w := listTools(g, "quiet"); w.Code != http.StatusOK {
		t.Fatalf("another namespace's ServiceAccount, at once: %d, want 200", w.Code)
	}
}

// A namespace's budget covers all its ServiceAccounts: a second
// ServiceAccount of a namespace over budget is refused too, one of
// another namespace is not.
func TestANamespaceBudgetCoversEveryServiceAccountOfIt(t *testing.T) {
	other := &authn.Identity{Username: "system:serviceaccount:noisy:other", Namespace: "noisy", ServiceAccount: "other"}
	o := completeOptions()
	o.Authn = tokenTable{"noisy": noisyIdentity, "other": other, "quiet": quietIdentity}
	o.Budgets = budget.Budgets{NamespaceRate: 0.01, NamespaceBurst: 2}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"noisy", "noisy"} {
		if w := listTools(g, tok); w.Code != http.StatusOK {
			t.Fatalf("within the namespace budget: %d", w.Code)
		}
	}
	w := listTools(g, "other")
	if w.Code != http.StatusTooManyRequests || !bytes.Contains(w.Body.Bytes(), []byte(budget.BudgetNamespace)) {
		t.Fatalf("another ServiceAccount of the namespace over budget: %d %s, want 429 naming the namespace budget", w.Code, w.Body)
	}
	if w := listTools(g, "quiet"); w.Code != http.StatusOK {
		t.Fatalf("another namespace: %d, want 200", w.Code)
	}
}

// A ServiceAccount with as many requests in flight as its budget allows
// is refused another at once; another namespace's is served, and the
// place comes back when a request ends.
func TestAServiceAccountAtItsConcurrencyBudgetDoesNotBlockAnother(t *testing.T) {
	o := completeOptions()
	o.Authn = tokenTable{"noisy": noisyIdentity, "quiet": quietIdentity}
	o.Budgets = budget.Budgets{ServiceAccountConcurrency: 2}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	entered := make(chan struct{}, 8)
	h := g.identifier.Handler(g.budgeted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if authn.IdentityOf(auth.TokenInfoFromContext(r.Context())) == noisyIdentity {
			entered <- struct{}{}
			<-hold
		}
		w.WriteHeader(http.StatusOK)
	})))
	serve := func(token string) int {
		r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(`{}`))
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if c := serve("noisy"); c != http.StatusOK {
				t.Errorf("a request within the budget: %d", c)
			}
		})
		<-entered
	}
	if c := serve("noisy"); c != http.StatusTooManyRequests {
		t.Errorf("a third request in flight: %d, want 429", c)
	}
	if c := serve("quiet"); c != http.StatusOK {
		t.Errorf("another namespace while the first is at its budget: %d, want 200", c)
	}
	close(hold)
	wg.Wait()
	if c := serve("noisy"); c != http.StatusOK {
		t.Errorf("after the requests ended: %d, want 200", c)
	}
	if n := g.budgets.Holding(); n != 0 {
		t.Errorf("%d in-flight counts left with nothing in flight", n)
	}
}
