package console

import (
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/review"
)

// View is what the page shows, sent to it whole on every change. Every
// string in it is text: the page puts it in text nodes, never in markup.
// Strings a server or an agent chose have the characters a person would
// not see written as visible escapes (review.Printable) as well.
type View struct {
	// User is who the console acts as, from the API server.
	User string `json:"user,omitempty"`
	// Scope is the namespace shown, or empty for every namespace.
	Scope string `json:"scope"`
	// Problems are what the API server refused or failed to answer, by
	// what was being done (watching McpTools, asking who you are, ...).
	Problems []Problem `json:"problems,omitempty"`

	Namespaces []NamespaceView `json:"namespaces"`
	Reviews    []ReviewItem    `json:"reviews"`
	Pending    []CallItem      `json:"pending"`
	Decided    []CallItem      `json:"decided"`
}

// Problem is one refusal or failure of the API server, as it said it.
type Problem struct {
	What    string `json:"what"`
	Message string `json:"message"`
}

// NamespaceView is the overview of one namespace.
type NamespaceView struct {
	Name    string       `json:"name"`
	Servers []ServerItem `json:"servers"`
	Tools   []ToolItem   `json:"tools"`
	// Features are its McpPrompts and McpResources.
	Features []FeatureItem `json:"features"`
}

// ServerItem is one McpServer's health.
type ServerItem struct {
	Name string `json:"name"`
	// Ready and Reachable are the conditions' status (True, False,
	// Unknown), with the Ready condition's reason and message.
	Ready        string `json:"ready"`
	Reachable    string `json:"reachable"`
	Reason       string `json:"reason,omitempty"`
	Message      string `json:"message,omitempty"`
	Suspended    bool   `json:"suspended,omitempty"`
	LastContact  string `json:"lastContact,omitempty"`
	Latency      string `json:"latency,omitempty"`
	Era          string `json:"era,omitempty"`
	ServerName   string `json:"serverName,omitempty"`
	Version      string `json:"version,omitempty"`
	DataClass    string `json:"dataClass"`
	ApprovalCall bool   `json:"approvalRequired"`
	Counts       Counts `json:"counts"`
}

// Counts are a server's McpTools by state. A tool counts once in
// Served, Review, Disabled or NotReady, in that order of precedence.
type Counts struct {
	Total    int `json:"total"`
	Served   int `json:"served"`
	Review   int `json:"review"`
	Disabled int `json:"disabled"`
	NotReady int `json:"notReady"`
}

// ToolItem is one McpTool in the overview, to enable or disable.
type ToolItem struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Server    string `json:"server"`
	LocalName string `json:"localName,omitempty"`
	Enabled   bool   `json:"enabled"`
	Ready     string `json:"ready"`
	Reason    string `json:"reason,omitempty"`
	DataClass string `json:"dataClass,omitempty"`
}

// FeatureItem is one McpPrompt or McpResource in the overview, to enable
// or disable.
type FeatureItem struct {
	// ObjectKind is McpPrompt or McpResource.
	ObjectKind string `json:"objectKind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Server     string `json:"server"`
	// RemoteName is a prompt's name on the server, a resource's URI or
	// URI template.
	RemoteName string `json:"remoteName"`
	LocalName  string `json:"localName,omitempty"`
	Enabled    bool   `json:"enabled"`
	Ready      string `json:"ready"`
	Reason     string `json:"reason,omitempty"`
	DataClass  string `json:"dataClass,omitempty"`
}

// ReviewItem is a tool, prompt or resource whose current definition is
// not approved: new (nothing approved yet) or drifted (another definition
// was approved).
type ReviewItem struct {
	// ObjectKind is McpTool, McpPrompt or McpResource.
	ObjectKind string `json:"objectKind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Server     string `json:"server"`
	// RemoteName is the tool's or prompt's name on the server, or the
	// resource's URI or URI template.
	RemoteName string `json:"remoteName"`
	LocalName  string `json:"localName,omitempty"`
	// Kind is "new" or "drifted".
	Kind    string `json:"kind"`
	Enabled bool   `json:"enabled"`
	// CurrentHash is what approving approves.
	CurrentHash  string `json:"currentHash"`
	ApprovedHash string `json:"approvedHash,omitempty"`
	// Current and Approved are the definitions as lines (review.Lines, or
	// review.Feature's Lines); Approved is empty when its text is not on
	// record, as it always is for a prompt or a resource. Diff is the
	// unified diff from Approved to Current, by line.
	Current  []string `json:"current"`
	Approved []string `json:"approved,omitempty"`
	Diff     []string `json:"diff,omitempty"`
	// Warnings are what the controllers report about the tool: each
	// condition that is not True, as "Type: Reason: message".
	Warnings []string `json:"warnings,omitempty"`
}

// CallItem is one McpCallApproval.
type CallItem struct {
	Namespace     string   `json:"namespace"`
	Name          string   `json:"name"`
	State         string   `json:"state"`
	Tool          string   `json:"tool"`
	LocalName     string   `json:"localName,omitempty"`
	Server        string   `json:"server"`
	Caller        string   `json:"caller"`
	CallerGroups  []string `json:"callerGroups,omitempty"`
	DataClass     string   `json:"dataClass"`
	ArgumentsHash string   `json:"argumentsHash"`
	Created       string   `json:"created,omitempty"`
	// ExpiresAt is RFC 3339; the page counts down to it.
	ExpiresAt string `json:"expiresAt"`
	DecidedBy string `json:"decidedBy,omitempty"`
	Reason    string `json:"reason,omitempty"`
	UsedAt    string `json:"usedAt,omitempty"`
}

// maxDecided bounds the decided calls shown: the most recent ones.
const maxDecided = 50

// Review kinds.
const (
	KindNew     = "new"
	KindDrifted = "drifted"
)

// Objects are what the console watches.
type Objects struct {
	Servers   []*mcpv1alpha1.McpServer
	Tools     []*mcpv1alpha1.McpTool
	Prompts   []*mcpv1alpha1.McpPrompt
	Resources []*mcpv1alpha1.McpResource
	Approvals []*mcpv1alpha1.McpCallApproval
}

// BuildView is the page's view of objs at now.
func BuildView(objs Objects, now time.Time) View {
	v := View{Namespaces: []NamespaceView{}, Reviews: []ReviewItem{}, Pending: []CallItem{}, Decided: []CallItem{}}
	byNS := map[string]*NamespaceView{}
	ns := func(name string) *NamespaceView {
		if n, ok := byNS[name]; ok {
			return n
		}
		n := &NamespaceView{Name: name, Servers: []ServerItem{}, Tools: []ToolItem{}, Features: []FeatureItem{}}
		byNS[name] = n
		return n
	}
	servers := map[[2]string]*ServerItem{}
	for _, s := range objs.Servers {
		ns(s.Namespace)
		servers[[2]string{s.Namespace, s.Name}] = serverItem(s)
	}
	for _, t := range objs.Tools {
		n := ns(t.Namespace)
		item := toolItem(t)
		n.Tools = append(n.Tools, item)
		key := [2]string{t.Namespace, t.Spec.ServerRef.Name}
		if servers[key] == nil {
			// A tool whose server is gone (or not visible) still counts.
			servers[key] = &ServerItem{Name: t.Spec.ServerRef.Name, Ready: "Unknown", Reachable: "Unknown", Reason: mcpv1alpha1.ReasonServerNotFound}
		}
		count(&servers[key].Counts, t)
		if r, ok := reviewItem(t); ok {
			v.Reviews = append(v.Reviews, r)
		}
	}
	features := make([]client.Object, 0, len(objs.Prompts)+len(objs.Resources))
	for _, p := range objs.Prompts {
		features = append(features, p)
	}
	for _, r := range objs.Resources {
		features = append(features, r)
	}
	for _, o := range features {
		item, r, ok := featureItems(o)
		if !ok {
			continue
		}
		n := ns(item.Namespace)
		n.Features = append(n.Features, item)
		if r != nil {
			v.Reviews = append(v.Reviews, *r)
		}
	}
	for key, s := range servers {
		n := ns(key[0])
		n.Servers = append(n.Servers, *s)
	}
	for _, a := range objs.Approvals {
		ns(a.Namespace)
		c := callItem(a, now)
		if c.State == governance.CallStatePending {
			v.Pending = append(v.Pending, c)
		} else {
			v.Decided = append(v.Decided, c)
		}
	}
	for _, n := range byNS {
		sort.Slice(n.Servers, func(i, j int) bool { return n.Servers[i].Name < n.Servers[j].Name })
		sort.Slice(n.Tools, func(i, j int) bool { return n.Tools[i].Name < n.Tools[j].Name })
		sort.Slice(n.Features, func(i, j int) bool {
			a, b := n.Features[i], n.Features[j]
			if a.ObjectKind != b.ObjectKind {
				return a.ObjectKind < b.ObjectKind
			}
			return a.Name < b.Name
		})
		v.Namespaces = append(v.Namespaces, *n)
	}
	sort.Slice(v.Namespaces, func(i, j int) bool { return v.Namespaces[i].Name < v.Namespaces[j].Name })
	// Drifted tools first: they were served and are not any more.
	sort.Slice(v.Reviews, func(i, j int) bool {
		a, b := v.Reviews[i], v.Reviews[j]
		if a.Kind != b.Kind {
			return a.Kind == KindDrifted
		}
		if a.Namespace+"/"+a.Name != b.Namespace+"/"+b.Name {
			return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
		}
		return a.ObjectKind < b.ObjectKind
	})
	// The call that expires first is decided first.
	sort.Slice(v.Pending, func(i, j int) bool {
		if v.Pending[i].ExpiresAt != v.Pending[j].ExpiresAt {
			return v.Pending[i].ExpiresAt < v.Pending[j].ExpiresAt
		}
		return v.Pending[i].Name < v.Pending[j].Name
	})
	sort.Slice(v.Decided, func(i, j int) bool {
		if v.Decided[i].Created != v.Decided[j].Created {
			return v.Decided[i].Created > v.Decided[j].Created
		}
		return v.Decided[i].Name < v.Decided[j].Name
	})
	if len(v.Decided) > maxDecided {
		v.Decided = v.Decided[:maxDecided]
	}
	return v
}

func serverItem(s *mcpv1alpha1.McpServer) *ServerItem {
	item := &ServerItem{Name: s.Name, Ready: condStatus(s.Status.Conditions, mcpv1alpha1.ConditionReady),
		Reachable: condStatus(s.Status.Conditions, mcpv1alpha1.ConditionReachable), Suspended: s.Spec.Suspend,
		DataClass: string(s.Spec.DataClass), ApprovalCall: governance.ServerApprovalRequired(s)}
	if c := meta.FindStatusCondition(s.Status.Conditions, mcpv1alpha1.ConditionReady); c != nil {
		item.Reason, item.Message = c.Reason, review.OneLine(c.Message, 1024)
	}
	item.LastContact = timeText(s.Status.LastContactTime)
	if l := s.Status.LastContactLatency; l != nil {
		item.Latency = l.Duration.String()
	}
	if si := s.Status.ServerInfo; si != nil {
		item.Era = review.OneLine(si.ProtocolVersion, 32)
		item.ServerName = review.OneLine(si.Name, 256)
		item.Version = review.OneLine(si.Version, 128)
	}
	return item
}

func toolItem(t *mcpv1alpha1.McpTool) ToolItem {
	item := ToolItem{Namespace: t.Namespace, Name: t.Name, Server: t.Spec.ServerRef.Name, LocalName: t.Status.LocalName,
		Enabled: t.Spec.Enabled, Ready: condStatus(t.Status.Conditions, mcpv1alpha1.ConditionReady), DataClass: string(t.Status.EffectiveDataClass)}
	if c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady); c != nil {
		item.Reason = c.Reason
	}
	return item
}

func count(c *Counts, t *mcpv1alpha1.McpTool) {
	c.Total++
	switch {
	case meta.IsStatusConditionTrue(t.Status.Conditions, mcpv1alpha1.ConditionReady):
		c.Served++
	case t.Status.DefinitionHash != "" && governance.Unapproved(t) != "":
		c.Review++
	case !t.Spec.Enabled:
		c.Disabled++
	default:
		c.NotReady++
	}
}

// reviewItem is t in the review queue, when its current definition is not
// the approved one.
func reviewItem(t *mcpv1alpha1.McpTool) (ReviewItem, bool) {
	why := governance.Unapproved(t)
	if why == "" || t.Status.DefinitionHash == "" {
		return ReviewItem{}, false
	}
	r := review.Of(t)
	item := ReviewItem{ObjectKind: kindTool, Namespace: t.Namespace, Name: t.Name, Server: r.Server, RemoteName: review.OneLine(r.RemoteName, 128),
		LocalName: t.Status.LocalName, Kind: KindNew, Enabled: t.Spec.Enabled, CurrentHash: r.CurrentHash, ApprovedHash: r.ApprovedHash,
		Current: review.Lines(review.Current(t))}
	if why == mcpv1alpha1.ReasonDefinitionChanged {
		item.Kind = KindDrifted
	}
	if r.Approved != nil {
		item.Approved = review.Lines(r.Approved)
		item.Diff = strings.Split(strings.TrimRight(r.Diff, "\n"), "\n")
	}
	item.Warnings = warnings(t.Status.Conditions, t.Status.Drift, t.Status.DefinitionHash)
	return item, true
}

// warnings are what the controllers report about an object: each
// condition that is not True, as "Type: Reason: message", and how the
// definition drifted, when the importer's record is of the definition
// shown (an older record says nothing about this one).
func warnings(conds []metav1.Condition, d *mcpv1alpha1.DefinitionDrift, current string) []string {
	var out []string
	for _, c := range conds {
		if c.Status != metav1.ConditionTrue {
			out = append(out, c.Type+": "+c.Reason+": "+review.OneLine(c.Message, 1024))
		}
	}
	if d != nil && d.ToHash == current {
		cats := make([]string, 0, len(d.Categories))
		for _, c := range d.Categories {
			cats = append(cats, string(c))
		}
		w := "Drift: " + strings.Join(cats, ", ")
		if len(d.Details) > 0 {
			w += ": " + review.OneLine(strings.Join(d.Details, "; "), 2048)
		}
		out = append(out, w)
	}
	return out
}

// featureItems are an McpPrompt or McpResource in the overview and, when
// its current definition is not the approved one, in the review queue
// (with its definition as review.Feature reads it: no approved text is on
// record for these kinds, so there is no diff). ok is false for an object
// of another kind.
func featureItems(o client.Object) (item FeatureItem, r *ReviewItem, ok bool) {
	f, ok := review.FeatureOf(o)
	if !ok {
		return FeatureItem{}, nil, false
	}
	var (
		server, remote, local string
		enabled               bool
		class                 mcpv1alpha1.DataClass
		conds                 []metav1.Condition
		drift                 *mcpv1alpha1.DefinitionDrift
	)
	switch o := o.(type) {
	case *mcpv1alpha1.McpPrompt:
		server, remote, local, enabled, class = o.Spec.ServerRef.Name, o.Spec.RemoteName, o.Status.LocalName, o.Spec.Enabled, o.Spec.DataClass
		conds, drift = o.Status.Conditions, o.Status.Drift
	case *mcpv1alpha1.McpResource:
		server, remote, enabled, class = o.Spec.ServerRef.Name, o.Spec.URI, o.Spec.Enabled, o.Spec.DataClass
		if remote == "" {
			remote = o.Spec.URITemplate
		}
		conds, drift = o.Status.Conditions, o.Status.Drift
	}
	item = FeatureItem{ObjectKind: f.Kind, Namespace: o.GetNamespace(), Name: o.GetName(), Server: server,
		RemoteName: review.OneLine(remote, 512), LocalName: review.OneLine(local, 256), Enabled: enabled,
		Ready: condStatus(conds, mcpv1alpha1.ConditionReady), DataClass: string(class)}
	if c := meta.FindStatusCondition(conds, mcpv1alpha1.ConditionReady); c != nil {
		item.Reason = c.Reason
	}
	if f.Hash == "" || f.Hash == f.Approved {
		return item, nil, true
	}
	r = &ReviewItem{ObjectKind: f.Kind, Namespace: item.Namespace, Name: item.Name, Server: server, RemoteName: item.RemoteName,
		LocalName: item.LocalName, Kind: KindNew, Enabled: enabled, CurrentHash: f.Hash, ApprovedHash: f.Approved,
		Current: f.Lines, Warnings: warnings(conds, drift, f.Hash)}
	if f.Approved != "" {
		r.Kind = KindDrifted
	}
	return item, r, true
}

func callItem(a *mcpv1alpha1.McpCallApproval, now time.Time) CallItem {
	c := CallItem{Namespace: a.Namespace, Name: a.Name, State: governance.CallState(a, now), Tool: a.Spec.Tool, LocalName: a.Spec.LocalName,
		Server: a.Spec.Server, Caller: review.OneLine(a.Spec.Caller, 512), DataClass: string(a.Spec.DataClass), ArgumentsHash: a.Spec.ArgumentsHash,
		Created: timeText(&a.CreationTimestamp), ExpiresAt: a.Spec.ExpiresAt.UTC().Format(time.RFC3339),
		DecidedBy: review.OneLine(a.Spec.DecidedBy, 512), Reason: review.OneLine(a.Spec.Reason, 1024), UsedAt: timeText(a.Status.ConsumedAt)}
	for _, g := range a.Spec.CallerGroups {
		c.CallerGroups = append(c.CallerGroups, review.OneLine(g, 512))
	}
	return c
}

func condStatus(conds []metav1.Condition, typ string) string {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return string(c.Status)
	}
	return string(metav1.ConditionUnknown)
}

func timeText(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
