package review

import (
	"context"
	"errors"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// FieldManager owns what kubectl mcp writes, from its commands and its
// console alike: spec.enabled and spec.approvedDefinitionHash of the
// McpTools it is told to change.
const FieldManager = "kubectl-mcp"

// HashPattern is the form of a definition hash.
var HashPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// GetTool reads an McpTool.
func GetTool(ctx context.Context, c client.Reader, ns, name string) (*mcpv1alpha1.McpTool, error) {
	var t mcpv1alpha1.McpTool
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &NotFoundError{Kind: "McpTool", Namespace: ns, Name: name}
		}
		return nil, &APIError{Doing: "reading the McpTool", Err: err}
	}
	return &t, nil
}

// Approve sets spec.approvedDefinitionHash to hash if, and only if, hash
// is the tool's current definition. A write that races a change of the
// tool is refused by the API server and checked again on a fresh read.
// force takes the field from another manager.
func Approve(ctx context.Context, c client.Client, ns, name, hash string, force bool) error {
	return onFreshTool(ctx, c, ns, name, func(t *mcpv1alpha1.McpTool) error {
		return ApproveIfCurrent(ctx, c, t, hash, force)
	})
}

// onFreshTool runs change on a fresh read of the tool until it does not
// fail with ErrStale, a few times at the most.
func onFreshTool(ctx context.Context, c client.Client, ns, name string, change func(*mcpv1alpha1.McpTool) error) error {
	for range 5 {
		t, err := GetTool(ctx, c, ns, name)
		if err != nil {
			return err
		}
		if err := change(t); !errors.Is(err, ErrStale) {
			return err
		}
	}
	return ErrStale
}

// ApproveIfCurrent approves hash on t as read. The write carries t's
// resourceVersion, so it fails with ErrStale when the tool changed since.
func ApproveIfCurrent(ctx context.Context, c client.Client, t *mcpv1alpha1.McpTool, hash string, force bool) error {
	switch cur := t.Status.DefinitionHash; {
	case cur == "":
		return ErrNotImported
	case cur != hash:
		return &DefinitionChangedError{Tool: t.Name, Current: cur, Reviewed: hash}
	}
	spec, err := OwnedSpec(t)
	if err != nil {
		return err
	}
	spec.WithApprovedDefinitionHash(hash)
	return applySpec(ctx, c, t, spec, force)
}

// applySpec applies spec, as FieldManager declares it, to t as read. The
// write carries t's resourceVersion: a tool changed since fails with
// ErrStale, a field another manager owns (without force) with
// FieldOwnedError.
func applySpec(ctx context.Context, c client.Client, t *mcpv1alpha1.McpTool, spec *mcpac.McpToolSpecApplyConfiguration, force bool) error {
	obj := mcpac.McpTool(t.Name, t.Namespace).WithResourceVersion(t.ResourceVersion).WithSpec(spec)
	return guardedApplyErr(c.Apply(ctx, obj, applyOptions(force)...), "McpTool")
}

// guardedApplyErr classifies what the API server answered an apply that
// carried the resourceVersion read: the object changed since (ErrStale), a
// field another manager owns (FieldOwnedError), or a failure.
func guardedApplyErr(err error, kind string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err) && !isFieldManagerConflict(err):
		return ErrStale
	case apierrors.IsConflict(err):
		return &FieldOwnedError{Err: err}
	}
	return &APIError{Doing: "writing the " + kind, Err: err}
}

// SetEnabled sets spec.enabled of an existing McpTool. Without force, a
// field another manager (Git) owns is not taken: FieldOwnedError says so.
func SetEnabled(ctx context.Context, c client.Client, ns, name string, enabled, force bool) error {
	t, err := GetTool(ctx, c, ns, name)
	if err != nil {
		return err
	}
	spec, err := OwnedSpec(t)
	if err != nil {
		return err
	}
	spec.WithEnabled(enabled)
	if err := c.Apply(ctx, mcpac.McpTool(name, ns).WithSpec(spec), applyOptions(force)...); err != nil {
		if apierrors.IsConflict(err) {
			return &FieldOwnedError{Err: err}
		}
		return &APIError{Doing: "writing the McpTool", Err: err}
	}
	return nil
}

func applyOptions(force bool) []client.ApplyOption {
	opts := []client.ApplyOption{client.FieldOwner(FieldManager)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	return opts
}

// OwnedSpec is the part of t's spec FieldManager owns, with the tool's
// identity. An apply states every field its manager means to keep, so
// enabling has to carry the approval this manager set earlier, and
// approving the enablement, or each would drop the other.
func OwnedSpec(t *mcpv1alpha1.McpTool) (*mcpac.McpToolSpecApplyConfiguration, error) {
	owned, err := mcpac.ExtractMcpTool(t, FieldManager)
	if err != nil {
		return nil, &APIError{Doing: "reading the fields " + FieldManager + " owns on McpTool " + t.Name, Err: err}
	}
	spec := owned.Spec
	if spec == nil {
		spec = mcpac.McpToolSpec()
	}
	return spec.WithServerRef(mcpac.LocalObjectReference().WithName(t.Spec.ServerRef.Name)).
		WithRemoteName(t.Spec.RemoteName), nil
}

func isFieldManagerConflict(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Type == metav1.CauseTypeFieldManagerConflict {
			return true
		}
	}
	return false
}
