package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// Per-object state, the way kube-state-metrics publishes it: computed at
// scrape time from the manager's cache, so a series exists exactly while its
// object does and never lags behind status.
var (
	serverReadyDesc = prometheus.NewDesc("mcp_catalog_server_ready",
		"1 when the McpServer's Ready condition is True, else 0.", []string{"namespace", "server"}, nil)
	serverReachableDesc = prometheus.NewDesc("mcp_catalog_server_reachable",
		"1 when the McpServer's last probe completed the handshake (Reachable=True), else 0.", []string{"namespace", "server"}, nil)
	serverSuspendedDesc = prometheus.NewDesc("mcp_catalog_server_suspended",
		"1 when the McpServer's spec.suspend is true, else 0.", []string{"namespace", "server"}, nil)
	toolsByReasonDesc = prometheus.NewDesc("mcp_catalog_tools_by_ready_reason",
		"McpTools of each McpServer by the reason of their Ready condition (Succeeded when Ready; Disabled, DefinitionChanged, ServerNotReady, ... when not).",
		[]string{"namespace", "server", "reason"}, nil)
	approvalsPendingDesc = prometheus.NewDesc("mcp_catalog_call_approvals_pending",
		"McpCallApprovals of each namespace waiting for a person's decision (undecided, not expired).", []string{"namespace"}, nil)
	approvalOldestPendingDesc = prometheus.NewDesc("mcp_catalog_call_approval_oldest_pending_seconds",
		"Age of the oldest McpCallApproval of each namespace still waiting for a person's decision; absent when none waits.", []string{"namespace"}, nil)
)

// State is the collector of per-object state. It reports nothing until
// SetStateReader gave it a reader.
var State = &stateCollector{}

// SetStateReader makes State read objects from r, normally the manager's
// cache. The last manager started in a process wins.
func SetStateReader(r client.Reader) { State.reader.Store(&r) }

type stateCollector struct {
	reader atomic.Pointer[client.Reader]
}

// listTimeout bounds a scrape's wait for a cache that is not synced yet.
const listTimeout = 5 * time.Second

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- serverReadyDesc
	ch <- serverReachableDesc
	ch <- serverSuspendedDesc
	ch <- toolsByReasonDesc
	ch <- approvalsPendingDesc
	ch <- approvalOldestPendingDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	rp := c.reader.Load()
	if rp == nil {
		return
	}
	r := *rp
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()

	var servers mcpv1alpha1.McpServerList
	if err := r.List(ctx, &servers); err == nil {
		for i := range servers.Items {
			s := &servers.Items[i]
			ch <- prometheus.MustNewConstMetric(serverReadyDesc, prometheus.GaugeValue,
				condTrue(s.Status.Conditions, mcpv1alpha1.ConditionReady), s.Namespace, s.Name)
			ch <- prometheus.MustNewConstMetric(serverReachableDesc, prometheus.GaugeValue,
				condTrue(s.Status.Conditions, mcpv1alpha1.ConditionReachable), s.Namespace, s.Name)
			ch <- prometheus.MustNewConstMetric(serverSuspendedDesc, prometheus.GaugeValue,
				boolValue(s.Spec.Suspend), s.Namespace, s.Name)
		}
	}

	var tools mcpv1alpha1.McpToolList
	if err := r.List(ctx, &tools); err == nil {
		type key struct{ ns, server, reason string }
		counts := map[key]int{}
		for i := range tools.Items {
			t := &tools.Items[i]
			reason := "Unknown"
			if c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady); c != nil {
				reason = c.Reason
			}
			counts[key{t.Namespace, t.Spec.ServerRef.Name, reason}]++
		}
		for k, n := range counts {
			ch <- prometheus.MustNewConstMetric(toolsByReasonDesc, prometheus.GaugeValue, float64(n), k.ns, k.server, k.reason)
		}
	}

	var approvals mcpv1alpha1.McpCallApprovalList
	if err := r.List(ctx, &approvals); err == nil {
		collectPending(ch, approvals.Items, time.Now())
	}
}

// collectPending reports, per namespace, how many calls wait for a person
// and how long the oldest has waited (governance.AwaitsPerson: the marks
// of spent ClientElicitation answers are not calls that wait).
func collectPending(ch chan<- prometheus.Metric, items []mcpv1alpha1.McpCallApproval, now time.Time) {
	type waiting struct {
		n      int
		oldest time.Time
	}
	byNS := map[string]*waiting{}
	for i := range items {
		a := &items[i]
		if !governance.AwaitsPerson(a, now) {
			continue
		}
		w := byNS[a.Namespace]
		if w == nil {
			w = &waiting{oldest: a.CreationTimestamp.Time}
			byNS[a.Namespace] = w
		}
		w.n++
		if a.CreationTimestamp.Before(&metav1.Time{Time: w.oldest}) {
			w.oldest = a.CreationTimestamp.Time
		}
	}
	for ns, w := range byNS {
		ch <- prometheus.MustNewConstMetric(approvalsPendingDesc, prometheus.GaugeValue, float64(w.n), ns)
		ch <- prometheus.MustNewConstMetric(approvalOldestPendingDesc, prometheus.GaugeValue, max(0, now.Sub(w.oldest).Seconds()), ns)
	}
}

func condTrue(conds []metav1.Condition, typ string) float64 {
	return boolValue(meta.IsStatusConditionTrue(conds, typ))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
