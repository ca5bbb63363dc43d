package approvals

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
)

// Sweeper deletes McpCallApprovals some time after they expire,
// whatever became of them; the audit trail keeps what happened. Every
// gateway replica may run one: a delete is conditional on the object's
// UID and a second delete of the same object is harmless.
type Sweeper struct {
	Client client.Client
	// Namespaces are the namespaces to sweep, one list each, as a gateway
	// limited to them (watchNamespaces) is allowed; empty sweeps every
	// namespace with one cluster-wide list.
	Namespaces []string
	// Keep is how long an expired approval stays visible; 0 means one hour.
	Keep time.Duration
	// Interval between sweeps; 0 means five minutes.
	Interval time.Duration
	// Clock is the clock expiry is judged by; nil is the real one.
	Clock clock.PassiveClock
}

// One sweep reads at most sweepPages pages of sweepPage approvals.
const (
	sweepPage  = 500
	sweepPages = 20
)

// NeedLeaderElection is false: the gateway's replicas all sweep.
func (s *Sweeper) NeedLeaderElection() bool { return false }

// Start sweeps every Interval until ctx ends.
func (s *Sweeper) Start(ctx context.Context) error {
	every := s.Interval
	if every <= 0 {
		every = 5 * time.Minute
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			logging.FromContext(ctx, logging.Sweeper).Error(err, "sweeping expired call approvals failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Sweep deletes the approvals that expired more than Keep ago, among the
// first sweepPages pages of each namespace swept, and reports how many it
// deleted.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	now := clockOr(s.Clock).Now()
	keep := s.Keep
	if keep <= 0 {
		keep = time.Hour
	}
	namespaces := s.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	deleted := 0
	states := map[string]int{"pending": 0, "approved": 0, "denied": 0, "used": 0, "expired": 0}
	for _, ns := range namespaces {
		n, err := s.sweepNamespace(ctx, ns, now, keep, states)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	for state, n := range states {
		metrics.GatewayApprovals.WithLabelValues(state).Set(float64(n))
	}
	return deleted, nil
}

// sweepNamespace sweeps one namespace ("" for all), counting the approvals
// it keeps into states.
func (s *Sweeper) sweepNamespace(ctx context.Context, ns string, now time.Time, keep time.Duration, states map[string]int) (int, error) {
	deleted, cont := 0, ""
	for range sweepPages {
		var list mcpv1alpha1.McpCallApprovalList
		if err := s.Client.List(ctx, &list, client.InNamespace(ns), client.Limit(sweepPage), client.Continue(cont)); err != nil {
			return deleted, fmt.Errorf("listing call approvals: %w", err)
		}
		for i := range list.Items {
			a := &list.Items[i]
			if now.Before(a.Spec.ExpiresAt.Add(keep)) {
				states[approvalStanding(a, now)]++
				continue
			}
			err := s.Client.Delete(ctx, a, client.Preconditions{UID: &a.UID})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return deleted, fmt.Errorf("deleting call approval %s/%s: %w", a.Namespace, a.Name, err)
			}
			if err == nil {
				deleted++
			}
		}
		if cont = list.Continue; cont == "" {
			break
		}
	}
	return deleted, nil
}

// approvalStanding names where an approval stands, for the approvals gauge.
func approvalStanding(a *mcpv1alpha1.McpCallApproval, now time.Time) string {
	switch {
	case a.Status.ConsumedAt != nil:
		return "used"
	case a.Spec.Decision == mcpv1alpha1.CallDenied:
		return "denied"
	case !now.Before(a.Spec.ExpiresAt.Time):
		return "expired"
	case a.Spec.Decision == mcpv1alpha1.CallApproved:
		return "approved"
	}
	return "pending"
}
