package review

import (
	"context"
	"errors"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// WhoAmI asks the API server who the client's credentials are: a decision
// records that name, and the API server refuses any other.
func WhoAmI(ctx context.Context, c client.Client) (string, error) {
	r := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, r); err != nil {
		return "", &APIError{Doing: "asking the API server who you are (SelfSubjectReview)", Err: err}
	}
	if r.Status.UserInfo.Username == "" {
		return "", &APIError{Doing: "asking the API server who you are (SelfSubjectReview)", Err: errors.New("the API server did not say")}
	}
	return r.Status.UserInfo.Username, nil
}

// DecideCall sets an undecided approval's decision as user, with reason.
// The update carries the resourceVersion it read, so of two people
// deciding at once only the first counts; RBAC and the approval admission
// policy decide whether user may decide at all.
func DecideCall(ctx context.Context, c client.Client, key types.NamespacedName, d mcpv1alpha1.CallDecision, user, reason string) error {
	a := &mcpv1alpha1.McpCallApproval{}
	if err := c.Get(ctx, key, a); err != nil {
		if apierrors.IsNotFound(err) {
			return &NotFoundError{Kind: "McpCallApproval", Namespace: key.Namespace, Name: key.Name}
		}
		return &APIError{Doing: "reading the McpCallApproval", Err: err}
	}
	switch state := governance.CallState(a, time.Now()); state {
	case governance.CallStatePending:
	case governance.CallStateExpired:
		return &ClosedError{State: state, ExpiresAt: a.Spec.ExpiresAt.Time}
	default:
		return &ClosedError{State: state, DecidedBy: a.Spec.DecidedBy}
	}
	if a.Spec.Caller == user {
		return &OwnCallError{User: user}
	}
	a.Spec.Decision, a.Spec.DecidedBy, a.Spec.Reason = d, user, reason
	if err := c.Update(ctx, a); err != nil {
		return &APIError{Doing: "recording the decision", Err: err}
	}
	return nil
}
