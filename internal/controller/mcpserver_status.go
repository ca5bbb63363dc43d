package controller

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/schedule"
	"github.com/mcp-catalog/operator/internal/tenancy"
)

// The functions in this file compute McpServer status from what the
// sub-reconcilers observed. They change only the server and the scope they
// are given (no client, no clock but the one passed in), and are
// table-tested; what they record for the schedule and the Events they ask
// for are acted on when the reconcile ends.

// failureReason maps a client error to a condition reason and a message
// built only from fixed text: nothing the server sent and nothing from the
// URL reaches the condition.
func failureReason(err error) (reason, message string) {
	var me *mcp.Error
	if !errors.As(err, &me) {
		return mcpv1alpha1.ReasonUnreachable, "the operation failed before reaching the server"
	}
	switch me.Kind {
	case mcp.KindUnauthorized:
		return mcpv1alpha1.ReasonUnauthorized, "the server answered 401 Unauthorized: check the credential"
	case mcp.KindForbidden:
		return mcpv1alpha1.ReasonForbidden, "the server answered 403 Forbidden: the credential lacks permission"
	case mcp.KindBudgetExhausted:
		return mcpv1alpha1.ReasonTimeout, "the operation did not complete within spec.operationTimeout"
	case mcp.KindCancelled:
		return mcpv1alpha1.ReasonTimeout, "the operation was cancelled"
	case mcp.KindUnreachable:
		return mcpv1alpha1.ReasonUnreachable, "the server could not be connected to"
	case mcp.KindUntrustedCertificate:
		return mcpv1alpha1.ReasonUntrustedCertificate, "the server's TLS certificate did not verify against the trusted CAs: if a private CA issued it, name its bundle in spec.tls.caBundleRef"
	case mcp.KindBlockedAddress:
		// One message for every class of address (docs/threat-model.md):
		// it names what lifts the refusal for the one class that can be.
		return mcpv1alpha1.ReasonBlockedAddress, "the URL resolves to an address the operator may not dial (link-local, metadata, or private without spec.allowPrivateNetwork and a range the operator's administrator allows with the manager flag --allowed-private-cidrs or --namespace-private-cidrs)"
	case mcp.KindServerError:
		return mcpv1alpha1.ReasonServerError, fmt.Sprintf("the server answered HTTP %d", me.StatusCode)
	case mcp.KindRedirect:
		return mcpv1alpha1.ReasonRedirected, fmt.Sprintf("the server answered with a redirect (HTTP %d), which is never followed: point spec.url at the final endpoint", me.StatusCode)
	case mcp.KindOversized:
		return mcpv1alpha1.ReasonResponseTooLarge, "the server's answer exceeded the 2 MiB read limit"
	case mcp.KindUnsupportedVersion:
		return mcpv1alpha1.ReasonUnsupportedProtocol, "the server speaks no MCP revision this operator supports"
	case mcp.KindPageLimit, mcp.KindToolLimit:
		return mcpv1alpha1.ReasonCatalogTooLarge, "the catalog exceeds spec.import.maxPages or spec.import.maxTools"
	case mcp.KindCatalogTooLarge:
		return mcpv1alpha1.ReasonCatalogTooLarge, fmt.Sprintf("the tool definitions the server offers exceed spec.import.maxCatalogBytes (%d bytes); nothing was changed", me.Limit)
	case mcp.KindInvalidEndpoint:
		// Nothing was sent. The URL passed the API server's checks, so it is
		// usually the credential: a Secret value with a line break, say.
		return mcpv1alpha1.ReasonInvalidSpec, "the URL or the credential read from the Secret cannot be used (a credential value must be a valid HTTP header value, without line breaks); nothing was sent"
	case mcp.KindInsecureCredential:
		return mcpv1alpha1.ReasonInsecureCredential, "a credential would be sent over plain http: use https or set spec.allowCredentialOverHTTP"
	case mcp.KindHTTPStatus:
		return mcpv1alpha1.ReasonProtocolError, fmt.Sprintf("the server answered HTTP %d", me.StatusCode)
	case mcp.KindRPCError:
		return mcpv1alpha1.ReasonProtocolError, fmt.Sprintf("the server returned JSON-RPC error %d", me.RPCCode)
	default:
		return mcpv1alpha1.ReasonProtocolError, fmt.Sprintf("the server's answer broke the protocol (%s)", me.Kind)
	}
}

// setReachable records a probe outcome. Success records the contact (see
// recordContact for how often); failure records only the condition, so the
// last good contact stays visible. refresh forces the contact to be
// rewritten: a requested probe, or an import, whose status is written anyway.
func setReachable(srv *mcpv1alpha1.McpServer, res *mcp.ProbeResult, err error, now time.Time, refresh bool) {
	if unauthenticatedButUp(srv, err) {
		// A delegated server without a discovery credential that answers
		// with a challenge is up; it is the operator's side that has no
		// credential to offer. Nothing completed, so no contact.
		setCondition(&srv.Status.Conditions, srv.Generation, mcpv1alpha1.ConditionReachable, metav1.ConditionTrue, mcpv1alpha1.ReasonUnauthenticated,
			"the server answered 401 with a WWW-Authenticate challenge: it is up and asks for a credential; set spec.auth.delegated.discoverySecretRef so that it can be imported", now)
		return
	}
	if err != nil {
		reason, msg := failureReason(err)
		setCondition(&srv.Status.Conditions, srv.Generation, mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, reason, msg, now)
		return
	}
	refresh = refresh || !meta.IsStatusConditionTrue(srv.Status.Conditions, mcpv1alpha1.ConditionReachable)
	recordContact(srv, res, now, refresh)
	setCondition(&srv.Status.Conditions, srv.Generation, mcpv1alpha1.ConditionReachable, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded,
		fmt.Sprintf("handshake completed (protocol %s)", res.ProtocolVersion), now)
}

// unauthenticatedButUp reports a challenged 401 from a delegated or
// per-person server that has no discovery credential to present.
func unauthenticatedButUp(srv *mcpv1alpha1.McpServer, err error) bool {
	a := srv.Spec.Auth
	switch {
	case a == nil:
		return false
	case a.Delegated != nil && a.Delegated.DiscoverySecretRef == nil:
	case a.PerPerson != nil && a.PerPerson.DiscoverySecretRef == nil:
	default:
		return false
	}
	var me *mcp.Error
	return errors.As(err, &me) && me.Kind == mcp.KindUnauthorized && me.Challenged
}

// Bounds of how stale status.lastContactTime of a reachable server gets:
// it is rewritten once it is ContactRefreshIntervals health intervals old,
// and never later than MaxContactAge. A probe that changes nothing else
// therefore writes status at most once in ContactRefreshIntervals probes.
const (
	ContactRefreshIntervals = 12
	MaxContactAge           = 6 * time.Minute
)

// contactMaxAge is how old lastContactTime may get before a probe that
// changes nothing else rewrites it.
func contactMaxAge(srv *mcpv1alpha1.McpServer) time.Duration {
	return min(ContactRefreshIntervals*healthInterval(srv), MaxContactAge)
}

// recordContact stores what a completed operation learnt about the server.
// What readers act on (what the server is and speaks) is written whenever
// it changes; the contact's time and latency only when refresh is set, when
// there is none yet, or when the last is contactMaxAge old. Every contact is
// counted in the metrics (observeContact) whether or not status shows it.
func recordContact(srv *mcpv1alpha1.McpServer, res *mcp.ProbeResult, now time.Time, refresh bool) {
	info := &mcpv1alpha1.ServerInfo{
		Name:            clip(res.Server.Name, 256),
		Title:           clip(res.Server.Title, 256),
		Version:         clip(res.Server.Version, 128),
		ProtocolVersion: clip(res.ProtocolVersion, 32),
		Capabilities:    clipAll(res.Capabilities, 32, 64),
	}
	last := srv.Status.LastContactTime
	if !refresh && last != nil && equality.Semantic.DeepEqual(info, srv.Status.ServerInfo) && now.Sub(last.Time) < contactMaxAge(srv) {
		return
	}
	t := metav1.NewTime(now.Truncate(time.Second))
	srv.Status.LastContactTime = &t
	srv.Status.LastContactLatency = &metav1.Duration{Duration: res.Latency.Round(time.Millisecond)}
	srv.Status.ServerInfo = info
}

// setSharingWarning sets SharingWarning while the server's sharing trusts
// more than its owner may mean (governance.SelectsEveryNamespace) or its
// selector grants nothing under trust (SelectorProblem), and removes it
// otherwise.
func setSharingWarning(srv *mcpv1alpha1.McpServer, trust governance.SelectorTrust, now time.Time) {
	var reason, msg string
	switch s := srv.Spec.Sharing; {
	case s == nil || s.NamespaceSelector == nil:
	case governance.SelectsEveryNamespace(srv):
		reason, msg = mcpv1alpha1.ReasonSelectsEveryNamespace, "spec.sharing.namespaceSelector is {}: the server is shared with every namespace, and with every one anybody creates later"
	default:
		reason, msg = mcpv1alpha1.ReasonSelectorNotTrusted, trust.SelectorProblem(s.NamespaceSelector)
	}
	if msg == "" {
		meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionSharingWarning)
		return
	}
	setCondition(&srv.Status.Conditions, srv.Generation, mcpv1alpha1.ConditionSharingWarning, metav1.ConditionTrue, reason, msg, now)
}

// summarize sets Ready, Reconciling and Stalled from the other conditions
// and the reconcile's error. Stalled comes only from a stallingError (see
// errors.go): a reason alone never stalls.
func summarize(srv *mcpv1alpha1.McpServer, reconcileErr error, now time.Time) {
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		setCondition(&srv.Status.Conditions, srv.Generation, typ, status, reason, msg, now)
	}
	if srv.Spec.Suspend {
		set(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonSuspended, "imports and probes are suspended")
		meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionReconciling)
		meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionStalled)
		return
	}
	if s, ok := asStalling(reconcileErr); ok {
		set(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, s.reason, s.err.Error())
		set(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, s.reason, s.err.Error())
		meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionReconciling)
		return
	}
	meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionStalled)

	// Ready needs every part healthy; the first part that is not says why.
	for _, typ := range []string{mcpv1alpha1.ConditionCredentialsResolved, mcpv1alpha1.ConditionCatalogSynced, mcpv1alpha1.ConditionReachable} {
		c := meta.FindStatusCondition(srv.Status.Conditions, typ)
		if c == nil || c.Status != metav1.ConditionTrue {
			reason, msg := mcpv1alpha1.ReasonProgressing, typ+" has not been determined yet"
			if c != nil {
				reason, msg = c.Reason, c.Message
			}
			set(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
			setReconciling(srv, reconcileErr, c, now)
			return
		}
	}
	set(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "credentials resolved, catalog synced and server reachable")
	if reconcileErr != nil {
		set(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing, "retrying after an error")
		return
	}
	meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionReconciling)
}

// setReconciling marks work in progress while a part has not been decided
// yet or the reconcile is retrying; a part that failed for a known reason is
// a settled (failed) state, not progress.
func setReconciling(srv *mcpv1alpha1.McpServer, reconcileErr error, blocking *metav1.Condition, now time.Time) {
	if reconcileErr != nil || blocking == nil || blocking.Status == metav1.ConditionUnknown {
		setCondition(&srv.Status.Conditions, srv.Generation, mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing, "work is in progress", now)
		return
	}
	meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionReconciling)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

func clipAll(in []string, maxItems, maxLen int) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, 0, min(len(in), maxItems))
	seen := map[string]bool{}
	for _, s := range in {
		s = clip(s, maxLen)
		if seen[s] || len(out) == maxItems {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// recordImport records how an import ended: CatalogSynced, the catalog's
// counts and skipped tools, the contact its handshake made (or the
// handshake's failure, as a probe would), what the schedule counts from,
// the Event and the metrics. listErr is the MCP operation's failure,
// applyErr the failure to write McpTools. It returns the reconcile's error:
// a stallingError for a failure only a spec change cures, the applyErr to
// be retried with backoff, nil otherwise.
func recordImport(sc *serverScope, cat *mcp.Catalog, listErr error, applied *appliedCatalog, applyErr error, took time.Duration) error {
	srv, now := sc.server, sc.now
	set := func(status metav1.ConditionStatus, reason, msg string) {
		setCondition(&srv.Status.Conditions, srv.Generation, mcpv1alpha1.ConditionCatalogSynced, status, reason, msg, now)
	}
	var exceeded *tenancy.ExceededError
	switch {
	case listErr != nil:
		reason, msg := failureReason(listErr)
		observeImport(took, reason)
		set(metav1.ConditionFalse, reason, "import failed: "+msg)
		sc.event(actionImport, eventWarning, EventImportFailed, "import failed (%s): %s", reason, msg)
		if handshakeFailed(listErr) {
			// A probe now would repeat the same handshake: a hung server
			// would hold a worker for two budgets instead of one.
			recordHandshake(sc, nil, listErr, took, false, false)
		}
		stall := classifyOperation(listErr, reason, "import failed: "+msg)
		if stall == nil {
			// Waiting: the next attempt is one health interval away.
			sc.outcome.Import, sc.outcome.RetryAfter = schedule.ImportFailed, sc.interval()
		}
		return stall
	case errors.As(applyErr, &exceeded):
		// The operation completed and was refused as a whole: the last
		// good catalog stays. Another server's tools going away can cure
		// it, which nothing here watches: it waits, like a server that is
		// down.
		recordHandshake(sc, &cat.Probe, nil, cat.Probe.Latency, true, false)
		reason := mcpv1alpha1.ReasonNamespaceToolLimit
		if exceeded.Limit == tenancy.LimitDefinitionBytes {
			reason = mcpv1alpha1.ReasonNamespaceDefinitionBytesLimit
		}
		msg := exceeded.Error() + "; nothing was changed"
		observeImport(took, reason)
		set(metav1.ConditionFalse, reason, "import refused: "+msg)
		sc.event(actionImport, eventWarning, EventImportFailed, "import refused (%s): %s", reason, msg)
		sc.outcome.Import, sc.outcome.RetryAfter = schedule.ImportFailed, sc.interval()
		return nil
	case applyErr != nil:
		// The operation completed: that is a contact, and counts as a probe.
		recordHandshake(sc, &cat.Probe, nil, cat.Probe.Latency, true, false)
		observeImport(took, mcpv1alpha1.ReasonImportFailed)
		set(metav1.ConditionFalse, mcpv1alpha1.ReasonImportFailed, "writing McpTools failed; retrying")
		return applyErr
	}
	// Status is written anyway, so the contact is refreshed with it.
	recordHandshake(sc, &cat.Probe, nil, cat.Probe.Latency, true, false)
	sc.outcome.Import = schedule.ImportSucceeded
	t := metav1.NewTime(now.Truncate(time.Second))
	srv.Status.LastImportTime = &t
	srv.Status.Tools, srv.Status.SkippedTools = applied.counts, applied.skipped
	msg := fmt.Sprintf("imported %d tools (%d skipped, %d enabled)", applied.counts.Imported, applied.counts.Skipped, applied.counts.Enabled)
	set(metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, msg)
	sc.event(actionImport, eventNormal, EventImportSucceeded, "%s", msg)
	sc.nextImport = now.Add(sc.importInterval)
	observeImport(took, "")
	setToolGauges(srv)
	return nil
}

// recordHandshake records the outcome of a handshake, from a probe or from
// an import: Reachable (with an Event when it changes), the contact on
// success (in the metrics always, in status at a bounded rate unless
// refresh), and the probe the schedule counts the next one from.
func recordHandshake(sc *serverScope, res *mcp.ProbeResult, err error, took time.Duration, refresh, onSchedule bool) {
	srv, now := sc.server, sc.now
	before := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReachable)
	hadCondition := before != nil
	wasReachable := hadCondition && before.Status == metav1.ConditionTrue
	setReachable(srv, res, err, now, refresh)
	c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReachable)
	if isReachable := c.Status == metav1.ConditionTrue; isReachable != wasReachable || !hadCondition {
		kind := eventNormal
		if !isReachable {
			kind = eventWarning
		}
		sc.event(actionProbe, kind, c.Reason, "%s", c.Message)
	}
	sc.outcome.Probed = &schedule.Probe{Interval: sc.interval(), OnSchedule: onSchedule}
	observeProbe(srv, took, err, now)
}

// handshakeFailed reports whether a failed import ended before its
// handshake completed, so that the failure answers a probe as well.
func handshakeFailed(err error) bool {
	var me *mcp.Error
	return !errors.As(err, &me) || me.Method != "tools/list"
}

func healthInterval(srv *mcpv1alpha1.McpServer) time.Duration {
	if hc := srv.Spec.HealthCheck.Interval; hc != nil && hc.Duration > 0 {
		return hc.Duration
	}
	return mcpv1alpha1.DefaultHealthCheckInterval
}

// pendingEvent is an Event a step asks for; the reconcile emits it at its
// end.
type pendingEvent struct {
	action, kind, reason, note string
	args                       []any
}

func (s *serverScope) event(action, kind, reason, note string, args ...any) {
	s.events = append(s.events, pendingEvent{action: action, kind: kind, reason: reason, note: note, args: args})
}
