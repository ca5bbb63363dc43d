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
	"github.com/mcp-catalog/operator/internal/logging"
)

// Watcher turns what the manager's informers see into events: a call
// waiting for a person (an McpCallApproval the gateway created undecided),
// the decision on one, and an McpTool whose definition changed to one that
// is not the approved one. An approval is announced only when it carries
// the gateway's seal (whoever may create McpCallApprovals could otherwise
// announce calls that do not exist), and the marks the gateway writes for
// spent ClientElicitation answers are not calls that wait. What the
// informers list when they start (or when the Watcher starts on a new
// leader) is not news and is not sent; a receiver dedupes on the event id
// whatever it is sent twice.
type Watcher struct {
	Cache    cache.Informers
	Notifier Notifier
	// CallApprovals sends the approval events too, not only drift: every
	// shard sees every approval, so only one instance should.
	CallApprovals bool
	// Seals are the keys the gateway seals approvals with. Without them
	// no approval event is sent: none could be told from a forgery.
	Seals SealKeys
	// Clock stamps the events; nil means the real clock.
	Clock clock.PassiveClock

	// ctx is Start's, for reading the keys.
	ctx context.Context
}

// SealKeys are the gateway's approval keys, current and previous. fresh
// asks for the keys as stored now rather than as cached.
type SealKeys interface {
	SealKeys(ctx context.Context, fresh bool) (current, previous []byte, err error)
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
	w.ctx = ctx
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
	if !w.CallApprovals || w.Seals == nil {
		if w.CallApprovals {
			logging.FromContext(ctx, logging.Notify).Info("call approvals are not notified: the approval key Secret the gateway seals them with is not configured")
		}
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

// approvalAdded announces a call that waits for a person: pending, not a
// spent answer's mark, and sealed by the gateway.
func (w *Watcher) approvalAdded(a *mcpv1alpha1.McpCallApproval) {
	if governance.AwaitsPerson(a, w.now()) && w.sealed(a) {
		w.Notifier.Notify(ApprovalCreated(a, w.now()))
	}
}

// approvalUpdated announces a person's decision on an approval the
// gateway sealed.
func (w *Watcher) approvalUpdated(old, cur *mcpv1alpha1.McpCallApproval) {
	if !governance.Decided(old) && governance.Decided(cur) && w.sealed(cur) {
		w.Notifier.Notify(ApprovalDecided(cur, w.now()))
	}
}

// sealed reports whether a carries the gateway's seal, reading the keys
// afresh once when the cached ones do not verify it (the gateway may have
// rotated them).
func (w *Watcher) sealed(a *mcpv1alpha1.McpCallApproval) bool {
	if w.Seals == nil {
		return false
	}
	ctx := w.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	for _, fresh := range []bool{false, true} {
		cur, prev, err := w.Seals.SealKeys(ctx, fresh)
		if err != nil {
			logging.FromContext(ctx, logging.Notify).Error(err, "reading the approval keys; the approval is not announced", "approval", a.Namespace+"/"+a.Name)
			return false
		}
		if governance.SealValid(a, cur, prev) {
			return true
		}
	}
	return false
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
