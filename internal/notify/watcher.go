package notify

import (
	"context"
	"fmt"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// Watcher turns what the manager's informers see into events: an
// McpCallApproval created undecided, an McpCallApproval decided, and an
// McpTool whose definition changed to one that is not the approved one.
// What the informers list when they start (or when the Watcher starts on
// a new leader) is not news and is not sent; a receiver dedupes on the
// event id whatever it is sent twice.
type Watcher struct {
	Cache    cache.Informers
	Notifier Notifier
	// CallApprovals sends the approval events too, not only drift: every
	// shard sees every approval, so only one instance should.
	CallApprovals bool
	// Clock stamps the events; nil means the real clock.
	Clock clock.PassiveClock
}

// NeedLeaderElection is true: one process sends each event.
func (w *Watcher) NeedLeaderElection() bool { return true }

// now reads Clock, or the real clock when none is set.
func (w *Watcher) now() time.Time {
	if w.Clock == nil {
		return time.Now()
	}
	return w.Clock.Now()
}

// Start registers the handlers and keeps them until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	tools, err := w.Cache.GetInformer(ctx, &mcpv1alpha1.McpTool{})
	if err != nil {
		return fmt.Errorf("notify: the McpTool informer: %w", err)
	}
	rt, err := tools.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*mcpv1alpha1.McpTool)
			n, ok2 := newObj.(*mcpv1alpha1.McpTool)
			if ok1 && ok2 {
				w.toolUpdated(o, n)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("notify: watching McpTools: %w", err)
	}
	defer func() { _ = tools.RemoveEventHandler(rt) }()
	if !w.CallApprovals {
		<-ctx.Done()
		return nil
	}
	approvals, err := w.Cache.GetInformer(ctx, &mcpv1alpha1.McpCallApproval{})
	if err != nil {
		return fmt.Errorf("notify: the McpCallApproval informer: %w", err)
	}
	ra, err := approvals.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if a, ok := obj.(*mcpv1alpha1.McpCallApproval); ok && !initial {
				w.approvalAdded(a)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*mcpv1alpha1.McpCallApproval)
			n, ok2 := newObj.(*mcpv1alpha1.McpCallApproval)
			if ok1 && ok2 {
				w.approvalUpdated(o, n)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("notify: watching McpCallApprovals: %w", err)
	}
	<-ctx.Done()
	_ = approvals.RemoveEventHandler(ra)
	return nil
}

func (w *Watcher) approvalAdded(a *mcpv1alpha1.McpCallApproval) {
	if governance.CallState(a, w.now()) == governance.CallStatePending {
		w.Notifier.Notify(ApprovalCreated(a, w.now()))
	}
}

func (w *Watcher) approvalUpdated(old, cur *mcpv1alpha1.McpCallApproval) {
	if !governance.Decided(old) && governance.Decided(cur) {
		w.Notifier.Notify(ApprovalDecided(cur, w.now()))
	}
}

// toolUpdated sends a drift when the importer replaced a definition with
// one that differs from the approved one (governance.Unapproved).
func (w *Watcher) toolUpdated(old, cur *mcpv1alpha1.McpTool) {
	if old.Status.DefinitionHash == "" || old.Status.DefinitionHash == cur.Status.DefinitionHash {
		return
	}
	if governance.Unapproved(cur) == mcpv1alpha1.ReasonDefinitionChanged {
		w.Notifier.Notify(DefinitionDrifted(cur, old.Status.DefinitionHash, w.now()))
	}
}
