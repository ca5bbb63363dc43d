package approvals

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AdmissionGuard tells whether the admission policy that makes a person's
// approval mean something is in force: the ValidatingAdmissionPolicy named
// policy exists and a binding of it denies. RBAC lets an approver update
// an McpCallApproval; only the policy keeps that approver from being the
// caller itself or from writing someone else's name in decidedBy. A
// cluster where the policy was deleted, or its binding names another
// policy (kustomize renaming one and not the other), must not let those
// approvals through. What it found is kept for admissionTTL, so that a
// burst of calls reads the API once.
type AdmissionGuard struct {
	reader client.Reader
	// policy is the policy's name; empty checks nothing.
	policy string

	mu      sync.Mutex
	checked time.Time
	missing string
}

// NewAdmissionGuard guards with the policy named policy, read through
// reader; an empty policy checks nothing.
func NewAdmissionGuard(reader client.Reader, policy string) *AdmissionGuard {
	return &AdmissionGuard{reader: reader, policy: policy}
}

// admissionTTL is how long the guard trusts what it last found.
const admissionTTL = 10 * time.Second

// MissingPart says what is missing ("" when the policy is in force, or
// when there is nothing to check). An error is a read that failed.
func (a *AdmissionGuard) MissingPart(ctx context.Context, now time.Time) (string, error) {
	if a.policy == "" || a.reader == nil {
		return "", nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if age := now.Sub(a.checked); !a.checked.IsZero() && age >= 0 && age < admissionTTL {
		return a.missing, nil
	}
	missing, err := a.read(ctx)
	if err != nil {
		return "", err
	}
	a.missing, a.checked = missing, now
	return missing, nil
}

func (a *AdmissionGuard) read(ctx context.Context) (string, error) {
	var p admissionregistrationv1.ValidatingAdmissionPolicy
	if err := a.reader.Get(ctx, client.ObjectKey{Name: a.policy}, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("the ValidatingAdmissionPolicy %s is not installed", a.policy), nil
		}
		return "", fmt.Errorf("reading the ValidatingAdmissionPolicy %s: %w", a.policy, err)
	}
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	if err := a.reader.List(ctx, &bindings); err != nil {
		return "", fmt.Errorf("listing ValidatingAdmissionPolicyBindings: %w", err)
	}
	for _, b := range bindings.Items {
		if b.Spec.PolicyName == a.policy && b.Spec.ParamRef == nil && b.Spec.MatchResources == nil &&
			slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
			return "", nil
		}
	}
	return fmt.Sprintf("no ValidatingAdmissionPolicyBinding binds the ValidatingAdmissionPolicy %s with the action Deny", a.policy), nil
}
