package console

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// store holds what the watches have seen, by kind and namespace/name, and
// what the API server refused, by kind. changed is signalled (without
// blocking) on every change.
type store struct {
	mu       sync.Mutex
	objs     map[string]map[string]client.Object
	problems map[string]string
	changed  chan struct{}
}

func newStore() *store {
	return &store{objs: map[string]map[string]client.Object{}, problems: map[string]string{}, changed: make(chan struct{}, 1)}
}

func (s *store) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func key(o client.Object) string { return o.GetNamespace() + "/" + o.GetName() }

func (s *store) replace(kind string, items []client.Object) {
	s.mu.Lock()
	m := make(map[string]client.Object, len(items))
	for _, o := range items {
		m[key(o)] = o
	}
	s.objs[kind] = m
	s.mu.Unlock()
	s.signal()
}

func (s *store) put(kind string, o client.Object) {
	s.mu.Lock()
	if s.objs[kind] == nil {
		s.objs[kind] = map[string]client.Object{}
	}
	s.objs[kind][key(o)] = o
	s.mu.Unlock()
	s.signal()
}

func (s *store) remove(kind string, o client.Object) {
	s.mu.Lock()
	delete(s.objs[kind], key(o))
	s.mu.Unlock()
	s.signal()
}

// setProblem records what the API server said about a kind; an empty
// message clears it.
func (s *store) setProblem(what, msg string) {
	s.mu.Lock()
	old := s.problems[what]
	if msg == "" {
		delete(s.problems, what)
	} else {
		s.problems[what] = msg
	}
	s.mu.Unlock()
	if old != msg {
		s.signal()
	}
}

// objects returns what is held now, and the problems.
func (s *store) objects() (Objects, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out Objects
	for _, o := range s.objs[kindServers] {
		out.Servers = append(out.Servers, o.(*mcpv1alpha1.McpServer))
	}
	for _, o := range s.objs[kindTools] {
		out.Tools = append(out.Tools, o.(*mcpv1alpha1.McpTool))
	}
	for _, o := range s.objs[kindPrompts] {
		out.Prompts = append(out.Prompts, o.(*mcpv1alpha1.McpPrompt))
	}
	for _, o := range s.objs[kindResources] {
		out.Resources = append(out.Resources, o.(*mcpv1alpha1.McpResource))
	}
	for _, o := range s.objs[kindApprovals] {
		out.Approvals = append(out.Approvals, o.(*mcpv1alpha1.McpCallApproval))
	}
	problems := make(map[string]string, len(s.problems))
	for k, v := range s.problems {
		problems[k] = v
	}
	return out, problems
}

// The kinds watched, named as the page names what failed.
const (
	kindServers   = "McpServers"
	kindTools     = "McpTools"
	kindApprovals = "McpCallApprovals"
	kindPrompts   = "McpPrompts"
	kindResources = "McpResources"
)

// watched is one kind the console follows.
type watched struct {
	kind    string
	newList func() client.ObjectList
	items   func(client.ObjectList) []client.Object
}

var watchedKinds = []watched{
	{kindServers, func() client.ObjectList { return &mcpv1alpha1.McpServerList{} }, func(l client.ObjectList) []client.Object {
		var out []client.Object
		for i := range l.(*mcpv1alpha1.McpServerList).Items {
			out = append(out, &l.(*mcpv1alpha1.McpServerList).Items[i])
		}
		return out
	}},
	{kindTools, func() client.ObjectList { return &mcpv1alpha1.McpToolList{} }, func(l client.ObjectList) []client.Object {
		var out []client.Object
		for i := range l.(*mcpv1alpha1.McpToolList).Items {
			out = append(out, &l.(*mcpv1alpha1.McpToolList).Items[i])
		}
		return out
	}},
	{kindPrompts, func() client.ObjectList { return &mcpv1alpha1.McpPromptList{} }, func(l client.ObjectList) []client.Object {
		var out []client.Object
		for i := range l.(*mcpv1alpha1.McpPromptList).Items {
			out = append(out, &l.(*mcpv1alpha1.McpPromptList).Items[i])
		}
		return out
	}},
	{kindResources, func() client.ObjectList { return &mcpv1alpha1.McpResourceList{} }, func(l client.ObjectList) []client.Object {
		var out []client.Object
		for i := range l.(*mcpv1alpha1.McpResourceList).Items {
			out = append(out, &l.(*mcpv1alpha1.McpResourceList).Items[i])
		}
		return out
	}},
	{kindApprovals, func() client.ObjectList { return &mcpv1alpha1.McpCallApprovalList{} }, func(l client.ObjectList) []client.Object {
		var out []client.Object
		for i := range l.(*mcpv1alpha1.McpCallApprovalList).Items {
			out = append(out, &l.(*mcpv1alpha1.McpCallApprovalList).Items[i])
		}
		return out
	}},
}

// Backoff between attempts after the API server refused or failed.
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
)

// follow lists and then watches one kind in namespace ns (every namespace
// when empty) with the user's client, keeping st current, until ctx ends.
// A refusal (no RBAC to list, say) is recorded as the kind's problem and
// tried again with backoff; the watch resumes from the last version seen
// and lists afresh only when the API server no longer has that version.
func follow(ctx context.Context, c client.WithWatch, ns string, w watched, st *store) {
	opts := func(rv string) []client.ListOption {
		o := []client.ListOption{}
		if ns != "" {
			o = append(o, client.InNamespace(ns))
		}
		if rv != "" {
			o = append(o, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		}
		return o
	}
	backoff := minBackoff
	wait := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
		return true
	}
	for ctx.Err() == nil {
		list := w.newList()
		if err := c.List(ctx, list, opts("")...); err != nil {
			if ctx.Err() != nil {
				return
			}
			st.setProblem("watching "+w.kind, err.Error())
			if !wait() {
				return
			}
			continue
		}
		st.replace(w.kind, w.items(list))
		st.setProblem("watching "+w.kind, "")
		backoff = minBackoff
		rv := list.GetResourceVersion()
		for ctx.Err() == nil && rv != "" {
			var ok bool
			rv, ok = watchFrom(ctx, c, w, rv, opts(rv), st)
			if !ok {
				// Failed or too old: list again, after a pause if the
				// API server refused.
				break
			}
		}
		if ctx.Err() == nil && !wait() {
			return
		}
	}
}

// watchFrom watches from version rv until the watch ends, applying every
// event to st. It returns the last version seen, and whether watching on
// from it makes sense (the API server closed the watch normally).
func watchFrom(ctx context.Context, c client.WithWatch, w watched, rv string, opts []client.ListOption, st *store) (string, bool) {
	wi, err := c.Watch(ctx, w.newList(), opts...)
	if err != nil {
		if ctx.Err() == nil {
			st.setProblem("watching "+w.kind, err.Error())
		}
		return rv, false
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			if o, ok := ev.Object.(client.Object); ok {
				st.put(w.kind, o)
				rv = o.GetResourceVersion()
			}
		case watch.Deleted:
			if o, ok := ev.Object.(client.Object); ok {
				st.remove(w.kind, o)
				rv = o.GetResourceVersion()
			}
		case watch.Bookmark:
			if o, ok := ev.Object.(client.Object); ok {
				rv = o.GetResourceVersion()
			}
		case watch.Error:
			// 410 Gone (the version is too old) and anything else: list
			// again.
			if err := apierrors.FromObject(ev.Object); !apierrors.IsGone(err) && !apierrors.IsResourceExpired(err) {
				st.setProblem("watching "+w.kind, err.Error())
			}
			return rv, false
		}
	}
	return rv, ctx.Err() == nil
}
