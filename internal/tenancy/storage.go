package tenancy

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// StorageLimits bound what the McpServers of one namespace may store
// through their imports. A zero field bounds nothing.
type StorageLimits struct {
	// Tools bounds the McpTools of the namespace's servers.
	Tools int64
	// DefinitionBytes bounds the definitions those tools carry, counted as
	// an import keeps them (mcp.DefinitionSize).
	DefinitionBytes int64
	// PromptsAndResources bounds the McpPrompts and McpResources the
	// imports of the namespace's servers store (a Ledger of their own,
	// counted in Usage.Tools).
	PromptsAndResources int64
}

// Usage is what one server's tools store, or a namespace's.
type Usage struct {
	Tools           int64
	DefinitionBytes int64
}

// The limits an import can exceed, as ExceededError.Limit names them.
const (
	LimitTools           = "tools"
	LimitDefinitionBytes = "definitionBytes"
	// LimitPromptsAndResources is a ledger of McpPrompts and McpResources
	// over StorageLimits.PromptsAndResources.
	LimitPromptsAndResources = "promptsAndResources"
)

// ExceededError says an import would take its namespace over a storage
// limit. The import changes nothing.
type ExceededError struct {
	// Limit is LimitTools, LimitDefinitionBytes or
	// LimitPromptsAndResources.
	Limit string
	// Namespace is the namespace's usage if the import went ahead; Max the
	// limit.
	Namespace, Max int64
}

func (e *ExceededError) Error() string {
	what := "McpTools"
	switch e.Limit {
	case LimitDefinitionBytes:
		what = "bytes of tool definitions"
	case LimitPromptsAndResources:
		what = "McpPrompts and McpResources"
	}
	return fmt.Sprintf("the import would bring the namespace to %d %s, above the administrator's limit of %d per namespace", e.Namespace, what, e.Max)
}

// Ledger keeps what each server's last admitted import stores, so that
// imports of one namespace running at once, or before the cache has seen
// the last one's status, are counted against each other. It is safe for
// concurrent use.
type Ledger struct {
	mu     sync.Mutex
	claims map[types.NamespacedName]Usage
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{claims: map[types.NamespacedName]Usage{}} }

// Admit decides whether server may store want after its import. recorded
// is what each server of the namespace stores by its status, by name; what
// the ledger holds for a server wins over it. An import is refused only
// when it takes the namespace above a limit and stores more than the
// server stores now, so that a namespace already over a lowered limit
// still takes in changed definitions. On success the ledger records want
// for server.
func (l *Ledger) Admit(server types.NamespacedName, want Usage, recorded map[string]Usage, limits StorageLimits) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var others Usage
	add := func(u Usage) {
		others.Tools += u.Tools
		others.DefinitionBytes += u.DefinitionBytes
	}
	for name, u := range recorded {
		if name == server.Name {
			continue
		}
		if c, ok := l.claims[types.NamespacedName{Namespace: server.Namespace, Name: name}]; ok {
			u = c
		}
		add(u)
	}
	for key, c := range l.claims {
		if _, ok := recorded[key.Name]; !ok && key.Namespace == server.Namespace && key != server {
			add(c)
		}
	}
	now, ok := l.claims[server]
	if !ok {
		now = recorded[server.Name]
	}
	if t := others.Tools + want.Tools; limits.Tools > 0 && t > limits.Tools && want.Tools > now.Tools {
		return &ExceededError{Limit: LimitTools, Namespace: t, Max: limits.Tools}
	}
	if b := others.DefinitionBytes + want.DefinitionBytes; limits.DefinitionBytes > 0 && b > limits.DefinitionBytes && want.DefinitionBytes > now.DefinitionBytes {
		return &ExceededError{Limit: LimitDefinitionBytes, Namespace: b, Max: limits.DefinitionBytes}
	}
	l.claims[server] = want
	return nil
}

// Forget drops a deleted server.
func (l *Ledger) Forget(server types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.claims, server)
}
