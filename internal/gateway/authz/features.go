package authz

import (
	"context"

	"github.com/mcp-catalog/operator/internal/gateway/authn"
)

// Prompts and resources are authorised by verbs of their own on their own
// resources (docs/adr/065-prompts-and-resources.md): a grant of tools
// grants none of them, and get or list, which let people read the
// objects, let no agent use them.
const (
	// VerbRead is the RBAC verb on mcpresources that lets a caller list
	// and read a resource or resource template.
	VerbRead = "read"
	// ResourcePrompts and ResourceResources are the resources prompts
	// (verb call) and resources (verb read) are authorised on.
	ResourcePrompts   = "mcpprompts"
	ResourceResources = "mcpresources"
)

// FeatureAuthorizer decides whether a caller may use a prompt or a
// resource: verb on resource for the object name, or for every object of
// the namespace when name is empty.
type FeatureAuthorizer interface {
	CanUse(ctx context.Context, id *authn.Identity, namespace, resource, verb, name string) (bool, error)
}

// CanUse implements FeatureAuthorizer with the reviews and remembered
// answers of CanCall.
func (a *SubjectAccessReviewAuthorizer) CanUse(ctx context.Context, id *authn.Identity, namespace, resource, verb, name string) (bool, error) {
	return a.reviewOf(ctx, id, namespace, resource, verb, name)
}
