package integration_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/test/apifault"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// api puts faults between the manager (the gateway included) and the API
// server; it passes every request unless a spec asks otherwise. The
// suite's own client does not go through it.
var api = &apifault.Injector{}

// The gateway depends on the API server for every decision it cannot take
// from its cache: who the caller is (TokenReview), what it may call
// (SubjectAccessReview), the upstream's credential. Without an answer it
// refuses, says that it could not decide, and serves again once answers
// come back; a call that was sent is never sent again.
var _ = Describe("Faults", func() {
	BeforeEach(func() { DeferCleanup(api.Up) })

	It("answers 503 while TokenReview is unavailable, never as if the token were bad, and serves the same token when reviews work again", func() {
		ns := newNamespace()
		up := newUpstream(ns, "fx", mcpserver.Options{}, []string{echo})
		bot := newAgent(ns, "bot").allowInternal()

		api.Refuse(apifault.Creates("tokenreviews"), 0)
		// More refusals than the bad-token limiter's burst: a review that
		// could not be made does not charge the token.
		for range 25 {
			resp := postInitialize(bot.token)
			Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
			Expect(resp.Header.Get("Retry-After")).NotTo(BeEmpty())
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(body)).To(ContainSubstring("could not review the token"))
		}
		_, err := dial(bot.token, nil, legacyEra)
		Expect(err).To(HaveOccurred())
		Expect(up.Calls(echo)).To(BeZero())

		api.Up()
		isErr, txt := call(bot.connect(nil, legacyEra), up.local(echo), map[string]any{"text": "back"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(Equal("back"))
		Expect(up.Calls(echo)).To(Equal(1))
	})

	It("refuses what it cannot authorise while SubjectAccessReview is unavailable, says so, and allows it once reviews work again", func() {
		ns := newNamespace()
		first := newUpstream(ns, "first", mcpserver.Options{}, []string{echo})
		bot := newAgent(ns, "bot").allowInternal()
		// A 2026-07-28 client decides every request anew; its session
		// began before the tool below existed, so no answer about that
		// tool is cached.
		cs := bot.connect(nil, modernEra)
		later := newUpstream(ns, "later", mcpserver.Options{}, []string{echo})

		fresh := newAgent(ns, "fresh").allowInternal()

		api.Refuse(apifault.Creates("subjectaccessreviews"), 0)
		for range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: later.local(echo), Arguments: map[string]any{"text": "x"}})
			cancel()
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring("could not decide"))
			Expect(err.Error()).NotTo(ContainSubstring("unknown tool"))
		}
		// A new agent cannot begin a session: it would offer nothing.
		_, err := dial(fresh.token, nil, legacyEra)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("could not decide"))
		Expect(later.Calls(echo)).To(BeZero())
		Expect(first.Calls(echo)).To(BeZero())
		for _, rec := range auditFor(ns, later.object(echo)) {
			Expect(rec.Phase).NotTo(Equal(audit.PhaseBefore), "nothing was decided, nothing sent")
		}

		api.Up()
		isErr, txt := call(cs, later.local(echo), map[string]any{"text": "allowed"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(later.Calls(echo)).To(Equal(1))
		Expect(toolNames(fresh.connect(nil, legacyEra))).To(ConsistOf(first.local(echo), later.local(echo)))
	})

	It("finishes a call in flight when the API server goes away, sends it once, refuses what it cannot decide, and recovers", func() {
		ns := newNamespace()
		up := newUpstream(ns, "fx", mcpserver.Options{}, []string{echo, slow})
		bot := newAgent(ns, "bot").allowInternal()
		cs := bot.connect(nil, legacyEra)
		// An agent the gateway has not met yet.
		other := newAgent(ns, "other").allowInternal()

		type result struct {
			isErr bool
			text  string
		}
		done := make(chan result, 1)
		go func() {
			defer GinkgoRecover()
			isErr, txt := call(cs, up.local(slow), map[string]any{"seconds": 4})
			done <- result{isErr, txt}
		}()
		Eventually(func() int { return up.Calls(slow) }, 20*time.Second).Should(Equal(1))

		// The API server restarts while the call runs upstream: every
		// request refused, every watch cut.
		api.Down()
		var r result
		Eventually(done, 30*time.Second).Should(Receive(&r))
		Expect(r.isErr).To(BeFalse(), r.text)
		Expect(up.Calls(slow)).To(Equal(1), "sent once")
		var phases []string
		for _, rec := range auditFor(ns, up.object(slow)) {
			phases = append(phases, rec.Phase)
		}
		Expect(phases).To(Equal([]string{audit.PhaseBefore, audit.PhaseAfter}))

		// A caller the gateway has not reviewed is refused, as unavailable.
		resp := postInitialize(other.token)
		Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
		Expect(up.Calls(echo)).To(BeZero())

		// Back: the gateway's watches resume and new callers are served.
		api.Up()
		isErr, txt := call(other.connect(nil, legacyEra), up.local(echo), map[string]any{"text": "after"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(up.Calls(echo)).To(Equal(1))
		Expect(up.Calls(slow)).To(Equal(1))
	})

	It("fails calls to an upstream that flaps with a clear reason, and never sends a call twice", func() {
		ns := newNamespace()
		up := mcpserver.Start(GinkgoT(), mcpserver.Options{})
		f := newFlapper(up.Handler())
		srv := declare(ns, "flap", f.URL+mcpserver.Path, []string{echo})
		bot := newAgent(ns, "bot").allowInternal()
		cs := bot.connect(nil, legacyEra)
		name := srv.local(echo)

		isErr, txt := call(cs, name, map[string]any{"text": "1"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(up.Calls(echo)).To(Equal(1))

		// Down: 503 from its load balancer. Nothing reaches the tool.
		f.mode.Store(flapUnavailable)
		isErr, txt = call(cs, name, map[string]any{"text": "2"})
		Expect(isErr).To(BeTrue())
		Expect(txt).To(ContainSubstring("failed ("))
		Expect(up.Calls(echo)).To(Equal(1))

		// Down the worst way: the server runs the call and its connection
		// drops before the answer. The call may have had its effect; the
		// gateway says it failed and does not send it again.
		f.mode.Store(flapDropAnswer)
		isErr, txt = call(cs, name, map[string]any{"text": "3"})
		Expect(isErr).To(BeTrue())
		Expect(txt).To(ContainSubstring("failed ("))
		Expect(up.Calls(echo)).To(Equal(2), "the call ran once and was not sent again")

		// Up again: served, each call once.
		f.mode.Store(flapUp)
		for i := range 3 {
			isErr, txt = call(cs, name, map[string]any{"text": "up"})
			Expect(isErr).To(BeFalse(), txt)
			Expect(up.Calls(echo)).To(Equal(3 + i))
		}
		var outcomes []string
		for _, rec := range auditFor(ns, srv.object(echo)) {
			if rec.Phase == audit.PhaseAfter {
				outcomes = append(outcomes, rec.Outcome)
			}
		}
		Expect(outcomes).To(Equal([]string{audit.OutcomeSucceeded, audit.OutcomeFailed, audit.OutcomeFailed,
			audit.OutcomeSucceeded, audit.OutcomeSucceeded, audit.OutcomeSucceeded}))
	})
})

// Modes of a flapper.
const (
	flapUp int32 = iota
	flapUnavailable
	flapDropAnswer
)

// flapper is an upstream's front that can go down: answer 503, or let a
// tools/call run and drop the connection before the answer.
type flapper struct {
	*httptest.Server
	mode atomic.Int32
}

func newFlapper(next http.Handler) *flapper {
	f := &flapper{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch f.mode.Load() {
		case flapUnavailable:
			http.Error(w, "no healthy upstream", http.StatusServiceUnavailable)
			return
		case flapDropAnswer:
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			if strings.Contains(string(body), `"tools/call"`) {
				next.ServeHTTP(httptest.NewRecorder(), r)
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					_ = conn.Close()
				}
				return
			}
		}
		next.ServeHTTP(w, r)
	}))
	DeferCleanup(f.Close)
	return f
}
