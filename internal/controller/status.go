package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The one way this package writes status, for every kind: a reconcile
// changes a copy of the object it read, and patchStatus sends the
// difference, or nothing when there is none. Conditions are set with
// setCondition only.

// FieldManagerStatus names the status writes of the McpServer, delegation
// profile and access policy controllers; each kind's status has that one
// writer. McpTool status has its own (governance.FieldManagerToolStatus).
const FieldManagerStatus = "mcp-catalog-controller"

// statusWrite says how patchStatus writes.
type statusWrite struct {
	// owner is the field manager named on the write.
	owner string
	// guarded makes the write fail with a conflict unless the object is
	// still at before's resourceVersion: for a write decided on a value a
	// person may change at the same moment (an approval).
	guarded bool
}

// patchStatus writes after's status when it differs from before's, as one
// merge patch. after must be a copy of before with only its status changed.
// An object deleted meanwhile is not an error. On success after holds the
// object as written, with its new resourceVersion.
func patchStatus(ctx context.Context, c client.Client, before, after client.Object, w statusWrite) (written bool, err error) {
	if equality.Semantic.DeepEqual(before, after) {
		return false, nil
	}
	patch := client.MergeFrom(before)
	if w.guarded {
		patch = client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	}
	if err := c.Status().Patch(ctx, after, patch, client.FieldOwner(w.owner)); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("patching the status of %s: %w", after.GetName(), err)
	}
	return true, nil
}

// setCondition sets one condition of an object of the given generation.
// Its transition time stays while its status does not change, and is now
// (to the second, as the API stores it) when it does.
func setCondition(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, message string, now time.Time) {
	c := metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
	if old := meta.FindStatusCondition(*conds, typ); old != nil && old.Status == status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	meta.SetStatusCondition(conds, c)
}
