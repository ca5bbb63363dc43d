package review

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcp-catalog/operator/internal/governance"
)

// ErrDefinitionChanged says the definition a person reviewed is no longer
// the tool's current one, so approving it would approve something unseen.
// A DefinitionChangedError is it.
var ErrDefinitionChanged = errors.New("the definition changed since it was reviewed")

// ErrNotImported says a tool has no definition yet: there is nothing to
// approve.
var ErrNotImported = errors.New("no definition has been imported yet")

// ErrStale says the McpTool (or McpPrompt, McpResource) changed between
// reading and writing it, every time it was tried.
var ErrStale = errors.New("the object changed while it was being approved")

// DefinitionChangedError names the definition that is current instead of
// the reviewed one.
type DefinitionChangedError struct {
	// Tool is the McpTool's name.
	Tool              string
	Current, Reviewed string
}

func (e *DefinitionChangedError) Error() string {
	return fmt.Sprintf("%v: the current definition is %s, not %s", ErrDefinitionChanged, e.Current, e.Reviewed)
}

// Is makes errors.Is(err, ErrDefinitionChanged) true.
func (e *DefinitionChangedError) Is(target error) bool { return target == ErrDefinitionChanged }

// NotFoundError says the object acted on does not exist.
type NotFoundError struct {
	Kind, Namespace, Name string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %s not found in namespace %s", e.Kind, e.Name, e.Namespace)
}

// FieldOwnedError says another field manager (Git, for example) owns the
// field: the change belongs there. Err is the API server's answer.
type FieldOwnedError struct {
	Err error
}

func (e *FieldOwnedError) Error() string {
	return "another manager owns this field (change it there, for example in Git): " + e.Err.Error()
}

func (e *FieldOwnedError) Unwrap() error { return e.Err }

// APIError is a request the API server refused or never answered, and
// what it was for. Err is the client's error, with the API server's
// message.
type APIError struct {
	Doing string
	Err   error
}

func (e *APIError) Error() string { return e.Doing + ": " + e.Err.Error() }

func (e *APIError) Unwrap() error { return e.Err }

// OwnCallError says the user is the caller of the call they tried to
// decide; the API server refuses that too.
type OwnCallError struct {
	User string
}

func (e *OwnCallError) Error() string {
	return e.User + " is the caller of this call and cannot decide it"
}

// ClosedError says a call approval can no longer be decided: it expired,
// or it was decided (State, by DecidedBy).
type ClosedError struct {
	State     string
	DecidedBy string
	ExpiresAt time.Time
}

func (e *ClosedError) Error() string {
	if e.State == governance.CallStateExpired {
		return fmt.Sprintf("the approval expired at %s; the agent's next call asks again", e.ExpiresAt.UTC().Format(time.RFC3339))
	}
	by := e.DecidedBy
	if by == "" {
		by = "-"
	}
	return fmt.Sprintf("the call is already %s (by %s); a decision is final", e.State, by)
}
