// Package notify tells a receiver outside the cluster, as it happens, what
// a person should look at: a call that waits for approval, the decision on
// it, and a tool whose definition drifted from the approved one. Events are
// CloudEvents 1.0 in JSON, signed with an HMAC key (see Webhook), sent by
// bounded queues, one per namespace and shared fairly, that drop rather
// than block (Notifier.Notify never blocks). Watcher derives the events from the manager's informers; a
// component that learns of a change first hand can call a Notifier itself.
package notify

import (
	"time"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// Event types, the CloudEvents "type" attribute.
const (
	TypeApprovalCreated   = "dev.catalog.mcp.callapproval.created"
	TypeApprovalDecided   = "dev.catalog.mcp.callapproval.decided"
	TypeDefinitionDrifted = "dev.catalog.mcp.tool.definition.drifted"
)

// Types are every event type, for metrics.
var Types = []string{TypeApprovalCreated, TypeApprovalDecided, TypeDefinitionDrifted}

// Event is a CloudEvent in the JSON format (structured mode).
type Event struct {
	SpecVersion string `json:"specversion"`
	// ID is unique per source: the object's UID and what happened, so a
	// receiver can drop a duplicate.
	ID string `json:"id"`
	// Source is the collection of the object, as an API path.
	Source string `json:"source"`
	Type   string `json:"type"`
	// Subject is the object's name.
	Subject         string    `json:"subject"`
	Time            time.Time `json:"time"`
	DataContentType string    `json:"datacontenttype"`
	Data            any       `json:"data"`
	// Namespace is the namespace of the object the event is about, which
	// the delivery queue shares its capacity by; it is not sent (Source
	// names it).
	Namespace string `json:"-"`
}

// ApprovalData is the data of the approval events. Arguments are never
// sent, only their hash, as on the McpCallApproval.
type ApprovalData struct {
	Namespace     string    `json:"namespace"`
	Name          string    `json:"name"`
	Tool          string    `json:"tool"`
	LocalName     string    `json:"localName"`
	Server        string    `json:"server"`
	Caller        string    `json:"caller"`
	DataClass     string    `json:"dataClass"`
	ArgumentsHash string    `json:"argumentsHash"`
	ExpiresAt     time.Time `json:"expiresAt"`
	// Decision, DecidedBy and Reason are set on a decided event.
	Decision  string `json:"decision,omitempty"`
	DecidedBy string `json:"decidedBy,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// DriftData is the data of a drift event: the hashes, never the
// definition a server wrote (a receiver reads it where people review it).
type DriftData struct {
	Namespace    string `json:"namespace"`
	Tool         string `json:"tool"`
	Server       string `json:"server"`
	RemoteName   string `json:"remoteName"`
	LocalName    string `json:"localName,omitempty"`
	Enabled      bool   `json:"enabled"`
	ApprovedHash string `json:"approvedHash"`
	PreviousHash string `json:"previousHash"`
	CurrentHash  string `json:"currentHash"`
	// Categories are how the current definition drifted (status.drift),
	// when the importer recorded them with it.
	Categories []string `json:"categories,omitempty"`
}

func source(ns, resource string) string {
	return "/apis/" + mcpv1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/" + resource
}

func approvalData(a *mcpv1alpha1.McpCallApproval) ApprovalData {
	return ApprovalData{Namespace: a.Namespace, Name: a.Name, Tool: a.Spec.Tool, LocalName: a.Spec.LocalName, Server: a.Spec.Server,
		Caller: a.Spec.Caller, DataClass: string(a.Spec.DataClass), ArgumentsHash: a.Spec.ArgumentsHash, ExpiresAt: a.Spec.ExpiresAt.UTC()}
}

func newEvent(typ, id, ns, resource, subject string, now time.Time, data any) Event {
	return Event{SpecVersion: "1.0", ID: id, Source: source(ns, resource), Type: typ, Subject: subject, Time: now.UTC(), DataContentType: "application/json", Data: data, Namespace: ns}
}

// ApprovalCreated is the event of a call that waits for approval a.
func ApprovalCreated(a *mcpv1alpha1.McpCallApproval, now time.Time) Event {
	return newEvent(TypeApprovalCreated, string(a.UID)+"/created", a.Namespace, "mcpcallapprovals", a.Name, now, approvalData(a))
}

// ApprovalDecided is the event of a person's decision on a.
func ApprovalDecided(a *mcpv1alpha1.McpCallApproval, now time.Time) Event {
	d := approvalData(a)
	d.Decision, d.DecidedBy, d.Reason = string(a.Spec.Decision), a.Spec.DecidedBy, a.Spec.Reason
	return newEvent(TypeApprovalDecided, string(a.UID)+"/decided", a.Namespace, "mcpcallapprovals", a.Name, now, d)
}

// DefinitionDrifted is the event of t's definition changing from previous
// to one that is not the approved one.
func DefinitionDrifted(t *mcpv1alpha1.McpTool, previous string, now time.Time) Event {
	data := DriftData{
		Namespace: t.Namespace, Tool: t.Name, Server: t.Spec.ServerRef.Name, RemoteName: t.Spec.RemoteName, LocalName: t.Status.LocalName,
		Enabled: t.Spec.Enabled, ApprovedHash: t.Spec.ApprovedDefinitionHash, PreviousHash: previous, CurrentHash: t.Status.DefinitionHash,
	}
	if d := t.Status.Drift; d != nil && d.ToHash == t.Status.DefinitionHash {
		for _, c := range d.Categories {
			data.Categories = append(data.Categories, string(c))
		}
	}
	return newEvent(TypeDefinitionDrifted, string(t.UID)+"/"+t.Status.DefinitionHash, t.Namespace, "mcptools", t.Name, now, data)
}

// Notifier takes events to deliver. Notify never blocks: an event that
// cannot be queued is dropped and counted.
type Notifier interface {
	Notify(Event)
}
