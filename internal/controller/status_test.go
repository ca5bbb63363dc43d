package controller

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/argrules"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/internal/toolview"
)

// wantCondition is a condition a table row expects.
type wantCondition struct {
	typ    string
	status metav1.ConditionStatus
	reason string
}

func want(typ string, status metav1.ConditionStatus, reason string) wantCondition {
	return wantCondition{typ, status, reason}
}

// assertConditions fails unless got holds exactly the wanted conditions
// (type, status, reason), each observing generation.
func assertConditions(t *testing.T, got []metav1.Condition, generation int64, wanted ...wantCondition) {
	t.Helper()
	if len(got) != len(wanted) {
		t.Errorf("got %d conditions %v, want %d", len(got), condSummary(got), len(wanted))
	}
	for _, w := range wanted {
		c := meta.FindStatusCondition(got, w.typ)
		if c == nil {
			t.Errorf("condition %s missing; have %v", w.typ, condSummary(got))
			continue
		}
		if c.Status != w.status || c.Reason != w.reason {
			t.Errorf("condition %s = %s/%s, want %s/%s (message %q)", w.typ, c.Status, c.Reason, w.status, w.reason, c.Message)
		}
		if c.ObservedGeneration != generation {
			t.Errorf("condition %s observedGeneration = %d, want %d", w.typ, c.ObservedGeneration, generation)
		}
		if c.Message == "" {
			t.Errorf("condition %s has no message", w.typ)
		}
	}
}

func condSummary(cs []metav1.Condition) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Type+"="+string(c.Status)+"/"+c.Reason)
	}
	return out
}

// serverBytes stands for anything a remote server or a URL could put into
// an error: none of it may reach a condition message.
const serverBytes = "SERVER-SAID-THIS"

func TestFailureReason(t *testing.T) {
	urlErr := &url.Error{Op: "Post", URL: "https://user:" + serverBytes + "@mcp.example.com/mcp?token=" + serverBytes, Err: errors.New("connection refused")}
	cases := []struct {
		kind     mcp.Kind
		status   int
		rpcCode  int
		reason   string
		contains string
	}{
		{mcp.KindInvalidEndpoint, 0, 0, mcpv1alpha1.ReasonInvalidSpec, "nothing was sent"},
		{mcp.KindUnreachable, 0, 0, mcpv1alpha1.ReasonUnreachable, "could not be connected"},
		{mcp.KindBlockedAddress, 0, 0, mcpv1alpha1.ReasonBlockedAddress, "--allowed-private-cidrs"},
		{mcp.KindUntrustedCertificate, 0, 0, mcpv1alpha1.ReasonUntrustedCertificate, "spec.tls.caBundleRef"},
		{mcp.KindBudgetExhausted, 0, 0, mcpv1alpha1.ReasonTimeout, "spec.operationTimeout"},
		{mcp.KindCancelled, 0, 0, mcpv1alpha1.ReasonTimeout, "cancelled"},
		{mcp.KindUnauthorized, 401, 0, mcpv1alpha1.ReasonUnauthorized, "401"},
		{mcp.KindForbidden, 403, 0, mcpv1alpha1.ReasonForbidden, "403"},
		{mcp.KindServerError, 503, 0, mcpv1alpha1.ReasonServerError, "HTTP 503"},
		{mcp.KindRedirect, 302, 0, mcpv1alpha1.ReasonRedirected, "HTTP 302"},
		{mcp.KindOversized, 200, 0, mcpv1alpha1.ReasonResponseTooLarge, "2 MiB"},
		{mcp.KindUnsupportedVersion, 200, 0, mcpv1alpha1.ReasonUnsupportedProtocol, "revision"},
		{mcp.KindPageLimit, 200, 0, mcpv1alpha1.ReasonCatalogTooLarge, "maxPages"},
		{mcp.KindToolLimit, 200, 0, mcpv1alpha1.ReasonCatalogTooLarge, "maxTools"},
		{mcp.KindInsecureCredential, 0, 0, mcpv1alpha1.ReasonInsecureCredential, "plain http"},
		{mcp.KindHTTPStatus, 418, 0, mcpv1alpha1.ReasonProtocolError, "HTTP 418"},
		{mcp.KindRPCError, 200, -32603, mcpv1alpha1.ReasonProtocolError, "-32603"},
		{mcp.KindNotMCP, 200, 0, mcpv1alpha1.ReasonProtocolError, "NotMCP"},
		{mcp.KindNoResponse, 200, 0, mcpv1alpha1.ReasonProtocolError, "NoResponse"},
		{mcp.KindInvalidResponse, 200, 0, mcpv1alpha1.ReasonProtocolError, "InvalidResponse"},
		{mcp.KindEmptyBody, 200, 0, mcpv1alpha1.ReasonProtocolError, "EmptyBody"},
		{mcp.KindRepeatedCursor, 200, 0, mcpv1alpha1.ReasonProtocolError, "RepeatedCursor"},
		{mcp.KindSessionExpired, 404, 0, mcpv1alpha1.ReasonProtocolError, "SessionExpired"},
	}
	for _, tc := range cases {
		t.Run(string(tc.kind), func(t *testing.T) {
			err := fmt.Errorf("listing tools: %w", &mcp.Error{
				Kind: tc.kind, Server: "ns/srv", StatusCode: tc.status, RPCCode: tc.rpcCode,
				RPCMessage: serverBytes, RPCData: []byte(`"` + serverBytes + `"`), Err: urlErr,
			})
			reason, msg := failureReason(err)
			if reason != tc.reason {
				t.Errorf("reason = %q, want %q", reason, tc.reason)
			}
			if !strings.Contains(msg, tc.contains) {
				t.Errorf("message %q does not say %q", msg, tc.contains)
			}
			if strings.Contains(msg, serverBytes) || strings.Contains(msg, "mcp.example.com") {
				t.Errorf("message %q carries server bytes or the URL", msg)
			}
		})
	}

	t.Run("not an MCP error", func(t *testing.T) {
		reason, msg := failureReason(fmt.Errorf("dial: %w", urlErr))
		if reason != mcpv1alpha1.ReasonUnreachable {
			t.Errorf("reason = %q, want %q", reason, mcpv1alpha1.ReasonUnreachable)
		}
		if strings.Contains(msg, serverBytes) || strings.Contains(msg, "mcp.example.com") {
			t.Errorf("message %q carries the error's text", msg)
		}
	})
}

func TestSetReachable(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour).Truncate(time.Second))
	earlierInfo := &mcpv1alpha1.ServerInfo{Name: "old", ProtocolVersion: "2025-06-18"}
	withContact := func() *mcpv1alpha1.McpServer {
		srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
		srv.Status.LastContactTime = &earlier
		srv.Status.LastContactLatency = &metav1.Duration{Duration: 42 * time.Millisecond}
		srv.Status.ServerInfo = earlierInfo.DeepCopy()
		setServerCondition(srv, mcpv1alpha1.ConditionReachable, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "ok")
		return srv
	}

	t.Run("success records the contact", func(t *testing.T) {
		srv := withContact()
		setServerCondition(srv, mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, mcpv1alpha1.ReasonTimeout, "was down")
		res := &mcp.ProbeResult{
			Server:          mcp.ServerInfo{Name: strings.Repeat("n", 300), Version: "2.0"},
			ProtocolVersion: "2026-07-28",
			Capabilities:    []string{"tools", "tools", "logging"},
			Latency:         1234567 * time.Microsecond,
		}
		setReachable(srv, res, nil, now, false)
		assertConditions(t, srv.Status.Conditions, 3, want(mcpv1alpha1.ConditionReachable, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		if got := srv.Status.LastContactTime; got == nil || !got.Time.Equal(now.Truncate(time.Second)) {
			t.Errorf("lastContactTime = %v, want %v", got, now.Truncate(time.Second))
		}
		if got := srv.Status.LastContactLatency; got == nil || got.Duration != 1235*time.Millisecond {
			t.Errorf("lastContactLatency = %v, want 1.235s", got)
		}
		si := srv.Status.ServerInfo
		if si == nil || len(si.Name) != 256 || si.Version != "2.0" || si.ProtocolVersion != "2026-07-28" {
			t.Errorf("serverInfo = %+v, want the name clipped to 256 and the rest as sent", si)
		}
		if si != nil && strings.Join(si.Capabilities, ",") != "tools,logging" {
			t.Errorf("capabilities = %v, want duplicates dropped", si.Capabilities)
		}
	})

	t.Run("failure records only the condition", func(t *testing.T) {
		srv := withContact()
		setReachable(srv, nil, &mcp.Error{Kind: mcp.KindUnauthorized, StatusCode: 401}, now, false)
		assertConditions(t, srv.Status.Conditions, 3, want(mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, mcpv1alpha1.ReasonUnauthorized))
		if !srv.Status.LastContactTime.Equal(&earlier) {
			t.Errorf("lastContactTime changed to %v", srv.Status.LastContactTime)
		}
		if srv.Status.LastContactLatency.Duration != 42*time.Millisecond {
			t.Errorf("lastContactLatency changed to %v", srv.Status.LastContactLatency)
		}
		if !reflect.DeepEqual(srv.Status.ServerInfo, earlierInfo) {
			t.Errorf("serverInfo changed to %+v", srv.Status.ServerInfo)
		}
	})
}

// A probe that changes nothing a reader acts on leaves status as it was
// until the recorded contact is contactMaxAge old, so that it causes no
// write; anything else rewrites the contact at once.
func TestSetReachableRefreshesTheContactAtABoundedRate(t *testing.T) {
	interval := 5 * time.Second
	maxAge := ContactRefreshIntervals * interval
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	res := &mcp.ProbeResult{Server: mcp.ServerInfo{Name: "s", Version: "1"}, ProtocolVersion: "2026-07-28", Capabilities: []string{"tools"}, Latency: 3 * time.Millisecond}
	// reachable is a server a probe of res found up, age ago.
	reachable := func(age time.Duration) *mcpv1alpha1.McpServer {
		srv := &mcpv1alpha1.McpServer{}
		srv.Spec.HealthCheck.Interval = &metav1.Duration{Duration: interval}
		setReachable(srv, res, nil, now.Add(-age), true)
		return srv
	}
	changed := *res
	changed.Capabilities = []string{"tools", "prompts"}
	newProtocol := *res
	newProtocol.ProtocolVersion = "2025-11-25"
	slower := *res
	slower.Latency = 40 * time.Millisecond
	for _, tc := range []struct {
		name      string
		srv       *mcpv1alpha1.McpServer
		res       *mcp.ProbeResult
		refresh   bool
		wantWrite bool
	}{
		{"unchanged, one interval after the contact", reachable(interval), res, false, false},
		{"unchanged but slower, just under the maximum age", reachable(maxAge - time.Second), &slower, false, false},
		{"unchanged, at the maximum age", reachable(maxAge), res, false, true},
		{"capabilities changed", reachable(interval), &changed, false, true},
		{"protocol changed", reachable(interval), &newProtocol, false, true},
		{"requested probe or import", reachable(interval), res, true, true},
		{"back after being unreachable", func() *mcpv1alpha1.McpServer {
			srv := reachable(interval)
			setReachable(srv, nil, &mcp.Error{Kind: mcp.KindUnreachable}, now.Add(-time.Second), false)
			return srv
		}(), res, false, true},
		{"first contact", &mcpv1alpha1.McpServer{}, res, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.srv.DeepCopy()
			setReachable(tc.srv, tc.res, nil, now, tc.refresh)
			if !meta.IsStatusConditionTrue(tc.srv.Status.Conditions, mcpv1alpha1.ConditionReachable) {
				t.Fatal("Reachable is not True after a successful probe")
			}
			wrote := !equality.Semantic.DeepEqual(before.Status, tc.srv.Status)
			if wrote != tc.wantWrite {
				t.Fatalf("status changed = %v, want %v (lastContactTime %v -> %v)", wrote, tc.wantWrite, before.Status.LastContactTime, tc.srv.Status.LastContactTime)
			}
			if tc.wantWrite && !tc.srv.Status.LastContactTime.Time.Equal(now) {
				t.Errorf("lastContactTime = %v, want the probe's time %v", tc.srv.Status.LastContactTime, now)
			}
		})
	}
}

func TestContactMaxAgeIsBounded(t *testing.T) {
	for _, tc := range []struct{ interval, want time.Duration }{
		{5 * time.Second, time.Minute},
		{30 * time.Second, 6 * time.Minute},
		{time.Minute, MaxContactAge},
		{time.Hour, MaxContactAge},
	} {
		srv := &mcpv1alpha1.McpServer{}
		srv.Spec.HealthCheck.Interval = &metav1.Duration{Duration: tc.interval}
		if got := contactMaxAge(srv); got != tc.want {
			t.Errorf("contactMaxAge(interval %s) = %s, want %s", tc.interval, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	const gen = 7
	healthy := []wantCondition{
		want(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded),
		want(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded),
		want(mcpv1alpha1.ConditionReachable, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded),
	}
	// with returns the healthy parts with one replaced.
	with := func(c wantCondition) []wantCondition {
		out := []wantCondition{}
		for _, h := range healthy {
			if h.typ == c.typ {
				h = c
			}
			out = append(out, h)
		}
		return out
	}
	without := func(typ string) []wantCondition {
		out := []wantCondition{}
		for _, h := range healthy {
			if h.typ != typ {
				out = append(out, h)
			}
		}
		return out
	}
	waiting := &waitingError{after: time.Second, reason: mcpv1alpha1.ReasonSecretNotFound, err: errors.New("no Secret")}
	stalling := &stallingError{reason: mcpv1alpha1.ReasonInvalidSpec, err: errors.New("dataClass is missing")}

	cases := []struct {
		name    string
		suspend bool
		// parts are the conditions the sub-reconcilers left; extra is
		// whatever summary conditions a previous reconcile left.
		parts []wantCondition
		extra []wantCondition
		err   error
		want  []wantCondition // besides parts
	}{
		{
			name:  "every part healthy",
			parts: healthy,
			extra: []wantCondition{want(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing)},
			want:  []wantCondition{want(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)},
		},
		{
			name:  "healthy but the reconcile failed (a status write, say)",
			parts: healthy,
			err:   errors.New("conflict"),
			want: []wantCondition{
				want(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded),
				want(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing),
			},
		},
		{
			name:  "first visit: nothing decided yet",
			parts: nil,
			want: []wantCondition{
				want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonProgressing),
				want(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing),
			},
		},
		{
			name:  "catalog not imported yet",
			parts: without(mcpv1alpha1.ConditionCatalogSynced),
			want: []wantCondition{
				want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonProgressing),
				want(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing),
			},
		},
		{
			name:  "waiting for a Secret",
			parts: []wantCondition{want(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotFound)},
			err:   waiting,
			want: []wantCondition{
				want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotFound),
				want(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing),
			},
		},
		{
			name:  "a settled failure is neither progress nor a stall",
			parts: with(want(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonUnauthorized)),
			extra: []wantCondition{want(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing)},
			want:  []wantCondition{want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonUnauthorized)},
		},
		{
			name:  "the first unhealthy part in order gives the reason",
			parts: with(want(mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, mcpv1alpha1.ReasonTimeout)),
			want:  []wantCondition{want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonTimeout)},
		},
		{
			name:  "a redirect stalls",
			parts: with(want(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonRedirected)),
			err:   &stallingError{reason: mcpv1alpha1.ReasonRedirected, err: errors.New("import failed")},
			want: []wantCondition{
				want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonRedirected),
				want(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonRedirected),
			},
		},
		{
			name:  "a blocked address stalls",
			parts: with(want(mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, mcpv1alpha1.ReasonBlockedAddress)),
			err:   &stallingError{reason: mcpv1alpha1.ReasonBlockedAddress, err: errors.New("blocked")},
			want: []wantCondition{
				want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonBlockedAddress),
				want(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonBlockedAddress),
			},
		},
		{
			name:  "a stalling reason alone does not stall",
			parts: with(want(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonRedirected)),
			want:  []wantCondition{want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonRedirected)},
		},
		{
			name:  "a stall clears once healthy",
			parts: healthy,
			extra: []wantCondition{want(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonRedirected)},
			want:  []wantCondition{want(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)},
		},
		{
			name:  "a stalling error",
			parts: healthy,
			extra: []wantCondition{want(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing)},
			err:   fmt.Errorf("checking the spec: %w", stalling),
			want: []wantCondition{
				want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonInvalidSpec),
				want(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonInvalidSpec),
			},
		},
		{
			name:    "suspended",
			suspend: true,
			parts:   with(want(mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, mcpv1alpha1.ReasonRedirected)),
			extra: []wantCondition{
				want(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing),
				want(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonRedirected),
			},
			want: []wantCondition{want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonSuspended)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
			srv.Spec.Suspend = tc.suspend
			for _, c := range append(append([]wantCondition{}, tc.parts...), tc.extra...) {
				setServerCondition(srv, c.typ, c.status, c.reason, "set by the table")
			}
			summarize(srv, tc.err, time.Now())
			assertConditions(t, srv.Status.Conditions, gen, append(append([]wantCondition{}, tc.parts...), tc.want...)...)
		})
	}
}

func TestSetToolViewReportsASpecThatCannotBeHonoured(t *testing.T) {
	name, err := toolname.ObjectName("docs", "search_docs")
	if err != nil {
		t.Fatal(err)
	}
	const hash = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	readyServer := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Name: "docs", Generation: 1}}
	readyServer.Spec.DataClass = mcpv1alpha1.DataClassInternal
	setServerCondition(readyServer, mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "x")
	tool := func(text bool, rules bool) *mcpv1alpha1.McpTool {
		tl := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 3}}
		tl.Spec.ServerRef.Name, tl.Spec.RemoteName, tl.Spec.Enabled = "docs", "search_docs", true
		tl.Spec.ApprovedDefinitionHash, tl.Status.DefinitionHash = hash, hash
		meta.SetStatusCondition(&tl.Status.Conditions, metav1.Condition{Type: mcpv1alpha1.ConditionImported, Status: metav1.ConditionTrue, Reason: mcpv1alpha1.ReasonSucceeded})
		if text {
			tl.Spec.ReviewedText = &mcpv1alpha1.ReviewedText{Description: "reviewed"}
		}
		if rules {
			tl.Spec.ArgumentRules = &mcpv1alpha1.ArgumentRules{}
		}
		return tl
	}
	badRules := &toolview.InvalidError{Rules: &argrules.InvalidError{Problems: []argrules.Problem{{What: `rule "r"`, Why: "does not compile: boom"}}}}
	badText := &toolview.InvalidError{Text: []string{`parameter "limit": not in the schema`}}
	cases := []struct {
		name     string
		tool     *mcpv1alpha1.McpTool
		honoured error
		ready    string
		// text and rules are the wanted ReviewedTextValid and
		// ArgumentRulesValid statuses, "" when the condition is absent.
		text, rules metav1.ConditionStatus
	}{
		{"neither set: no conditions", tool(false, false), nil, mcpv1alpha1.ReasonSucceeded, "", ""},
		{"both honoured", tool(true, true), nil, mcpv1alpha1.ReasonSucceeded, metav1.ConditionTrue, metav1.ConditionTrue},
		{"a rule that does not compile", tool(true, true), badRules, mcpv1alpha1.ReasonArgumentRulesInvalid, metav1.ConditionTrue, metav1.ConditionFalse},
		{"a parameter not in the schema", tool(true, false), badText, mcpv1alpha1.ReasonReviewedTextInvalid, metav1.ConditionFalse, ""},
		{"not imported yet: not known", tool(false, true), toolview.ErrNoDefinition, mcpv1alpha1.ReasonSucceeded, "", metav1.ConditionUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := tc.tool.DeepCopy()
			// A condition left from an earlier spec is removed with it.
			meta.SetStatusCondition(&tl.Status.Conditions, metav1.Condition{Type: mcpv1alpha1.ConditionReviewedTextValid, Status: metav1.ConditionFalse, Reason: "Old"})
			setToolView(tl, readyServer, tc.honoured, time.Now())
			ready := meta.FindStatusCondition(tl.Status.Conditions, mcpv1alpha1.ConditionReady)
			if ready.Reason != tc.ready || (ready.Status == metav1.ConditionTrue) != (tc.ready == mcpv1alpha1.ReasonSucceeded) {
				t.Errorf("Ready = %s/%s, want reason %s (%q)", ready.Status, ready.Reason, tc.ready, ready.Message)
			}
			for typ, want := range map[string]metav1.ConditionStatus{mcpv1alpha1.ConditionReviewedTextValid: tc.text, mcpv1alpha1.ConditionArgumentRulesValid: tc.rules} {
				c := meta.FindStatusCondition(tl.Status.Conditions, typ)
				switch {
				case want == "" && c != nil:
					t.Errorf("%s present (%s) while the spec does not set it", typ, c.Status)
				case want != "" && c == nil:
					t.Errorf("%s absent, want %s", typ, want)
				case c != nil && (c.Status != want || c.ObservedGeneration != tl.Generation || c.Message == ""):
					t.Errorf("%s = %s/%s gen %d (%q), want %s", typ, c.Status, c.Reason, c.ObservedGeneration, c.Message, want)
				}
			}
			if c := meta.FindStatusCondition(tl.Status.Conditions, mcpv1alpha1.ConditionArgumentRulesValid); c != nil && c.Status == metav1.ConditionFalse && !strings.Contains(c.Message, `rule "r": does not compile`) {
				t.Errorf("the condition does not name the rule: %q", c.Message)
			}
		})
	}
}

func TestSetToolView(t *testing.T) {
	const (
		hashA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		hashB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	)
	server := func(class mcpv1alpha1.DataClass, approval *bool, ready bool) *mcpv1alpha1.McpServer {
		srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Name: "docs", Generation: 1}}
		srv.Spec.DataClass, srv.Spec.ApprovalRequired = class, approval
		status := metav1.ConditionFalse
		if ready {
			status = metav1.ConditionTrue
		}
		setServerCondition(srv, mcpv1alpha1.ConditionReady, status, mcpv1alpha1.ReasonSucceeded, "x")
		return srv
	}
	yes, no := true, false
	readyServer := server(mcpv1alpha1.DataClassInternal, &yes, true)

	// tool is an imported, enabled tool with definition hashA, which
	// spec.approvedDefinitionHash approves; options change that.
	type opt func(*mcpv1alpha1.McpTool)
	tool := func(opts ...opt) *mcpv1alpha1.McpTool {
		name, err := toolname.ObjectName("docs", "search_docs")
		if err != nil {
			t.Fatal(err)
		}
		tl := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 2}}
		tl.Spec.ServerRef.Name, tl.Spec.RemoteName, tl.Spec.Enabled = "docs", "search_docs", true
		tl.Spec.ApprovedDefinitionHash, tl.Status.DefinitionHash = hashA, hashA
		meta.SetStatusCondition(&tl.Status.Conditions, metav1.Condition{Type: mcpv1alpha1.ConditionImported, Status: metav1.ConditionTrue, Reason: mcpv1alpha1.ReasonSucceeded})
		for _, o := range opts {
			o(tl)
		}
		return tl
	}
	disabled := func(tl *mcpv1alpha1.McpTool) { tl.Spec.Enabled = false }
	definition := func(h string) opt { return func(tl *mcpv1alpha1.McpTool) { tl.Status.DefinitionHash = h } }
	imported := func(status metav1.ConditionStatus, reason string) opt {
		return func(tl *mcpv1alpha1.McpTool) {
			meta.SetStatusCondition(&tl.Status.Conditions, metav1.Condition{Type: mcpv1alpha1.ConditionImported, Status: status, Reason: reason, Message: "m"})
		}
	}

	cases := []struct {
		name   string
		tool   *mcpv1alpha1.McpTool
		server *mcpv1alpha1.McpServer
		ready  metav1.ConditionStatus
		reason string
		class  mcpv1alpha1.DataClass
		// approval is the effective approval.
		approval bool
	}{
		{"servable", tool(), readyServer, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, mcpv1alpha1.DataClassInternal, true},
		{"disabled", tool(disabled), readyServer, metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled, mcpv1alpha1.DataClassInternal, true},
		{"server missing: strictest class and approval", tool(), nil, metav1.ConditionFalse, mcpv1alpha1.ReasonServerNotFound, mcpv1alpha1.DataClassRestricted, true},
		{"never imported", tool(func(tl *mcpv1alpha1.McpTool) { tl.Status = mcpv1alpha1.McpToolStatus{} }), readyServer, metav1.ConditionFalse, mcpv1alpha1.ReasonNotImported, mcpv1alpha1.DataClassInternal, true},
		{"removed from the server", tool(imported(metav1.ConditionFalse, mcpv1alpha1.ReasonRemovedFromServer)), readyServer, metav1.ConditionFalse, mcpv1alpha1.ReasonRemovedFromServer, mcpv1alpha1.DataClassInternal, true},
		{"refused by the last import", tool(imported(metav1.ConditionFalse, mcp.SkipInvalidSchema)), readyServer, metav1.ConditionFalse, mcp.SkipInvalidSchema, mcpv1alpha1.DataClassInternal, true},
		{"definition changed since approved", tool(definition(hashB)), readyServer, metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionChanged, mcpv1alpha1.DataClassInternal, true},
		{"changed definition re-approved", tool(definition(hashB), func(tl *mcpv1alpha1.McpTool) { tl.Spec.ApprovedDefinitionHash = hashB }), readyServer, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, mcpv1alpha1.DataClassInternal, true},
		{"an approval of another definition does not serve this one", tool(func(tl *mcpv1alpha1.McpTool) { tl.Spec.ApprovedDefinitionHash = hashB }), readyServer, metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionChanged, mcpv1alpha1.DataClassInternal, true},
		{"enabling approves nothing: no approval on record is not servable", tool(func(tl *mcpv1alpha1.McpTool) { tl.Spec.ApprovedDefinitionHash = "" }), readyServer, metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionNotApproved, mcpv1alpha1.DataClassInternal, true},
		{"re-created with an empty status and no approval: not servable", tool(func(tl *mcpv1alpha1.McpTool) {
			tl.Spec.ApprovedDefinitionHash = ""
			tl.Status = mcpv1alpha1.McpToolStatus{DefinitionHash: hashB}
			meta.SetStatusCondition(&tl.Status.Conditions, metav1.Condition{Type: mcpv1alpha1.ConditionImported, Status: metav1.ConditionTrue, Reason: mcpv1alpha1.ReasonSucceeded})
		}), readyServer, metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionNotApproved, mcpv1alpha1.DataClassInternal, true},
		{"server not ready", tool(), server(mcpv1alpha1.DataClassInternal, nil, false), metav1.ConditionFalse, mcpv1alpha1.ReasonServerNotReady, mcpv1alpha1.DataClassInternal, true},
		{"wrong object name is never served", tool(func(tl *mcpv1alpha1.McpTool) { tl.Name = "docs.something-else" }), readyServer, metav1.ConditionFalse, mcpv1alpha1.ReasonNameMismatch, mcpv1alpha1.DataClassInternal, true},
		{"the tool raises the class", tool(func(tl *mcpv1alpha1.McpTool) { tl.Spec.DataClass = mcpv1alpha1.DataClassConfidential }), readyServer, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, mcpv1alpha1.DataClassConfidential, true},
		{"the tool cannot lower the class", tool(func(tl *mcpv1alpha1.McpTool) { tl.Spec.DataClass = mcpv1alpha1.DataClassPublic }), server(mcpv1alpha1.DataClassRestricted, &yes, true), metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, mcpv1alpha1.DataClassRestricted, true},
		{"server approval unset means required", tool(), server(mcpv1alpha1.DataClassPublic, nil, true), metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, mcpv1alpha1.DataClassPublic, true},
		{"server approval off", tool(), server(mcpv1alpha1.DataClassPublic, &no, true), metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, mcpv1alpha1.DataClassPublic, false},
		{"the tool requires approval where the server does not", tool(func(tl *mcpv1alpha1.McpTool) { tl.Spec.ApprovalRequired = &yes }), server(mcpv1alpha1.DataClassPublic, &no, true), metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, mcpv1alpha1.DataClassPublic, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := tc.tool.DeepCopy()
			setToolView(tl, tc.server, nil, time.Now())
			v := tl.Status
			ready := meta.FindStatusCondition(v.Conditions, mcpv1alpha1.ConditionReady)
			if ready == nil {
				t.Fatal("no Ready condition")
			}
			if ready.Status != tc.ready || ready.Reason != tc.reason {
				t.Errorf("Ready = %s/%s, want %s/%s (message %q)", ready.Status, ready.Reason, tc.ready, tc.reason, ready.Message)
			}
			if ready.Message == "" {
				t.Error("no message")
			}
			if ready.ObservedGeneration != tl.Generation || v.ObservedGeneration != tl.Generation {
				t.Errorf("observed generation %d (Ready %d), want %d", v.ObservedGeneration, ready.ObservedGeneration, tl.Generation)
			}
			if v.EffectiveDataClass != tc.class {
				t.Errorf("effective class = %s, want %s", v.EffectiveDataClass, tc.class)
			}
			if v.EffectiveApprovalRequired == nil || *v.EffectiveApprovalRequired != tc.approval {
				t.Errorf("effective approval = %v, want %v", v.EffectiveApprovalRequired, tc.approval)
			}
			if v.LocalName != "mcp_docs_search_docs" || v.Group != "mcp_docs" {
				t.Errorf("names = %q, %q", v.LocalName, v.Group)
			}
			if v.Effect != mcpv1alpha1.EffectNonIdempotentWrite || !v.RequiresAdmin {
				t.Errorf("effect = %q, requiresAdmin = %v; want NonIdempotentWrite and true whatever the server says", v.Effect, v.RequiresAdmin)
			}
		})
	}
}

func TestHandshakeFailed(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&mcp.Error{Kind: mcp.KindBudgetExhausted, Method: "server/discover"}, true},
		{&mcp.Error{Kind: mcp.KindUnauthorized, Method: "initialize"}, true},
		{&mcp.Error{Kind: mcp.KindInvalidEndpoint}, true},
		{fmt.Errorf("import: %w", &mcp.Error{Kind: mcp.KindOversized, Method: "tools/list"}), false},
		{&mcp.Error{Kind: mcp.KindPageLimit, Method: "tools/list"}, false},
		{errors.New("not from the client"), true},
	} {
		if got := handshakeFailed(tc.err); got != tc.want {
			t.Errorf("handshakeFailed(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestPendingRequest(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name, annotation, handled, want string
	}{
		{"no request", "", "", ""},
		{"new request", "2026-01-01T00:00:00Z", "", "2026-01-01T00:00:00Z"},
		{"handled", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", ""},
		{"another request", "2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"},
		{"a long value is recorded as its digest", long, "", requestToken(long)},
		{"a long value handled", long, requestToken(long), ""},
		{"a long value with the same beginning is another request", long + "y", requestToken(long), requestToken(long + "y")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pendingRequest(tc.annotation, tc.handled); got != tc.want {
				t.Errorf("pendingRequest = %q, want %q", got, tc.want)
			}
			if len(tc.want) > maxHandledLength {
				t.Errorf("%q does not fit status", tc.want)
			}
		})
	}
	if got := requestToken(long); !strings.HasPrefix(got, "sha256:") || len(got) != 71 {
		t.Errorf("requestToken(long) = %q, want sha256:<64 hex>", got)
	}
}

// The reconcile's result must turn a waiting error into a timed requeue and
// a stall into no requeue, never into error backoff.
func TestResultOf(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res, err := resultOf(&waitingError{after: 3 * time.Second, reason: "R", err: errors.New("x")}, time.Time{}, now)
	if err != nil || res.RequeueAfter != 3*time.Second {
		t.Errorf("waiting: %+v, %v; want a requeue after 3s and no error", res, err)
	}
	res, err = resultOf(&waitingError{after: time.Minute, reason: "R", err: errors.New("x")}, now.Add(10*time.Second), now)
	if err != nil || res.RequeueAfter != 10*time.Second {
		t.Errorf("waiting with an earlier probe: %+v, %v; want the earlier", res, err)
	}
	res, err = resultOf(&stallingError{reason: "R", err: errors.New("x")}, now.Add(time.Minute), now)
	if err != nil || res.RequeueAfter != 0 {
		t.Errorf("stalling: %+v, %v; want neither a requeue nor an error", res, err)
	}
	res, err = resultOf(nil, earliest(now.Add(time.Minute), now.Add(10*time.Second)), now)
	if err != nil || res.RequeueAfter != 10*time.Second {
		t.Errorf("success: %+v, %v; want the earliest requested requeue", res, err)
	}
	res, err = resultOf(nil, now.Add(-time.Minute), now)
	if err != nil || res.RequeueAfter != time.Second {
		t.Errorf("overdue: %+v, %v; want a requeue after a second, not a busy loop", res, err)
	}
	boom := errors.New("boom")
	if _, err = resultOf(boom, time.Time{}, now); !errors.Is(err, boom) {
		t.Errorf("generic error = %v, want it returned", err)
	}
}

func TestImportDueReimportsPeriodicallyByDefault(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	server := func(interval *metav1.Duration, last time.Time) *mcpv1alpha1.McpServer {
		srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Name: "s", Generation: 1}}
		srv.Spec.Import.Interval = interval
		lt := metav1.NewTime(last)
		srv.Status.LastImportTime = &lt
		meta.SetStatusCondition(&srv.Status.Conditions, metav1.Condition{Type: mcpv1alpha1.ConditionCatalogSynced, Status: metav1.ConditionTrue, Reason: mcpv1alpha1.ReasonSucceeded, ObservedGeneration: 1})
		return srv
	}
	for _, tc := range []struct {
		name     string
		srv      *mcpv1alpha1.McpServer
		due      bool
		nextWant time.Time
	}{
		{"no interval stored: the default hour has not passed", server(nil, now.Add(-30*time.Minute)), false, now.Add(30 * time.Minute)},
		{"no interval stored: the default hour has passed", server(nil, now.Add(-61*time.Minute)), true, time.Time{}},
		{"an explicit interval wins", server(&metav1.Duration{Duration: 5 * time.Minute}, now.Add(-6*time.Minute)), true, time.Time{}},
		{"an explicit interval not yet passed", server(&metav1.Duration{Duration: 5 * time.Minute}, now.Add(-time.Minute)), false, now.Add(4 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &serverScope{server: tc.srv, now: now, importInterval: importInterval(tc.srv)}
			due := importDue(sc)
			if next := sc.nextImport; due != tc.due || !next.Equal(tc.nextWant) {
				t.Errorf("importDue = %v, %s; want %v, %s", due, sc.nextImport, tc.due, tc.nextWant)
			}
		})
	}
}

func TestIsServerOwnerMatchesAnyVersionOfTheGroup(t *testing.T) {
	for _, tc := range []struct {
		ref  metav1.OwnerReference
		want bool
	}{
		{metav1.OwnerReference{APIVersion: "mcp.catalog.dev/v1alpha1", Kind: "McpServer"}, true},
		{metav1.OwnerReference{APIVersion: "mcp.catalog.dev/v1", Kind: "McpServer"}, true},
		{metav1.OwnerReference{APIVersion: "other.example.com/v1", Kind: "McpServer"}, false},
		{metav1.OwnerReference{APIVersion: "mcp.catalog.dev/v1alpha1", Kind: "McpTool"}, false},
		{metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap"}, false},
	} {
		if got := isServerOwner(tc.ref); got != tc.want {
			t.Errorf("isServerOwner(%s %s) = %v, want %v", tc.ref.APIVersion, tc.ref.Kind, got, tc.want)
		}
	}
}

func TestAwaitingImportOnlyBetweenTheImportersTwoWrites(t *testing.T) {
	byImporter := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{mcpv1alpha1.LabelServer: "s"}}}
	written := byImporter.DeepCopy()
	written.Status.DefinitionHash = "sha256:00"
	setToolCondition := func(t *mcpv1alpha1.McpTool) *mcpv1alpha1.McpTool {
		meta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: mcpv1alpha1.ConditionImported, Status: metav1.ConditionFalse, Reason: mcpv1alpha1.ReasonRemovedFromServer})
		return t
	}
	declared := byImporter.DeepCopy()
	declared.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "argocd-controller", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}
	for _, tc := range []struct {
		name string
		tool *mcpv1alpha1.McpTool
		want bool
	}{
		{"created by the importer, status not written yet", byImporter, true},
		{"definition written", written, false},
		{"marked by an import", setToolCondition(byImporter.DeepCopy()), false},
		{"declared in Git before any import", declared, false},
		{"declared without the server label", &mcpv1alpha1.McpTool{}, false},
	} {
		if got := awaitingImport(tc.tool); got != tc.want {
			t.Errorf("%s: awaitingImport = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func setServerCondition(srv *mcpv1alpha1.McpServer, typ string, status metav1.ConditionStatus, reason, msg string) {
	setCondition(&srv.Status.Conditions, srv.Generation, typ, status, reason, msg, time.Now())
}

// Status reports the effects in force: the review while it is of the
// approved definition, with EffectsReviewed True; a review of another
// definition is reported as not applying, and the tool as the unsafe
// write, whatever its server's hints say.
func TestToolStatusReportsTheReviewedEffectsInForce(t *testing.T) {
	const hashA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	const hashB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	yes := true
	srv := &mcpv1alpha1.McpServer{Spec: mcpv1alpha1.McpServerSpec{DataClass: mcpv1alpha1.DataClassPublic}}
	for _, tc := range []struct {
		name      string
		approved  string
		reviewed  *mcpv1alpha1.ReviewedEffects
		effect    string
		condition metav1.ConditionStatus // "" when there is none
	}{
		{"not reviewed", hashA, nil, mcpv1alpha1.EffectNonIdempotentWrite, ""},
		{"reviewed read-only", hashA, &mcpv1alpha1.ReviewedEffects{DefinitionHash: hashA, ReadOnly: &yes}, mcpv1alpha1.EffectReadOnly, metav1.ConditionTrue},
		{"reviewed idempotent", hashA, &mcpv1alpha1.ReviewedEffects{DefinitionHash: hashA, Idempotent: &yes}, mcpv1alpha1.EffectIdempotentWrite, metav1.ConditionTrue},
		{"reviewed for another definition", hashB, &mcpv1alpha1.ReviewedEffects{DefinitionHash: hashA, ReadOnly: &yes}, mcpv1alpha1.EffectNonIdempotentWrite, metav1.ConditionFalse},
	} {
		tl := &mcpv1alpha1.McpTool{Spec: mcpv1alpha1.McpToolSpec{ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, RemoteName: "search",
			ApprovedDefinitionHash: tc.approved, ReviewedEffects: tc.reviewed}}
		tl.Status.DefinitionHash = tc.approved
		tl.Status.Hints = &mcpv1alpha1.ToolHints{ReadOnlyHint: &yes}
		setToolView(tl, srv, nil, time.Now())
		if tl.Status.Effect != tc.effect {
			t.Errorf("%s: effect %s, want %s", tc.name, tl.Status.Effect, tc.effect)
		}
		c := meta.FindStatusCondition(tl.Status.Conditions, mcpv1alpha1.ConditionEffectsReviewed)
		switch {
		case tc.condition == "" && c != nil:
			t.Errorf("%s: EffectsReviewed %s without a review", tc.name, c.Status)
		case tc.condition != "" && (c == nil || c.Status != tc.condition):
			t.Errorf("%s: EffectsReviewed %+v, want %s", tc.name, c, tc.condition)
		case c != nil && c.Status == metav1.ConditionFalse && !strings.Contains(c.Message, hashA):
			t.Errorf("%s: the message %q does not name the definition reviewed", tc.name, c.Message)
		}
	}
}
