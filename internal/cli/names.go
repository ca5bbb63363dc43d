package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/review"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// The commands that act on one McpTool (approve, enable, disable, diff,
// describe-as) take it in any of the three forms a person meets it in:
// the object name (tickets.create-ticket), the server and remote name
// (tickets/create_ticket), or the name agents see (mcp_tickets_create_ticket),
// which is what an audit record, an approval message or an agent's log
// shows. A name that matches no tool gets the near names of the namespace's
// tools, in the form it was given.

// resolveTool returns the McpTool object name an argument names.
func resolveTool(arg string) (string, error) {
	if server, remote, ok := strings.Cut(arg, "/"); ok {
		name, err := toolname.ObjectName(server, remote)
		if err != nil {
			return "", usageErr("%s: %v", arg, err)
		}
		return name, nil
	}
	if toolname.IsSharedLocalName(arg) {
		return "", usageErr("%s is a tool another namespace shares with this one: its owner enables and approves it there (`kubectl mcp tools` shows the owner)", arg)
	}
	if strings.HasPrefix(arg, "mcp_") {
		name, err := toolname.ObjectNameOfLocal(arg)
		if err != nil {
			return "", usageErr("%s: %v", arg, err)
		}
		return name, nil
	}
	return arg, nil
}

// maxSuggestions is how many near names a "not found" offers.
const maxSuggestions = 3

// toolErr is reviewErr for an error about the McpTool arg names: a "not
// found" gets the near names of the namespace's McpTools, written in the
// form arg was given in. A failure to list adds nothing.
func toolErr(ctx context.Context, c client.Client, ns, arg string, err error) error {
	out := reviewErr(err)
	var nf *review.NotFoundError
	if !errors.As(err, &nf) || nf.Kind != "McpTool" {
		return out
	}
	var list mcpv1alpha1.McpToolList
	if c.List(ctx, &list, client.InNamespace(ns)) != nil {
		return out
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		names = append(names, toolForm(arg, &list.Items[i]))
	}
	near := nearNames(arg, names, maxSuggestions)
	if len(near) == 0 {
		return out
	}
	return &exitError{code: ExitFailed, err: fmt.Errorf("%w; did you mean %s?", out, strings.Join(near, ", "))}
}

// toolForm writes a tool's name in the form arg has.
func toolForm(arg string, t *mcpv1alpha1.McpTool) string {
	switch {
	case strings.Contains(arg, "/"):
		return t.Spec.ServerRef.Name + "/" + t.Spec.RemoteName
	case strings.HasPrefix(arg, "mcp_"):
		return toolname.LocalName(t.Spec.ServerRef.Name, t.Spec.RemoteName)
	}
	return t.Name
}

// nearNames returns at most max of names close to arg: within an edit
// distance of a sixth of its length (at least 2), or beginning with it,
// nearest first. Names of one namespace share long prefixes (mcp_demo_),
// so a larger share would offer every short tool name.
func nearNames(arg string, names []string, max int) []string {
	limit := len(arg) / 6
	if limit < 2 {
		limit = 2
	}
	type scored struct {
		name string
		d    int
	}
	var near []scored
	seen := map[string]bool{}
	for _, n := range names {
		if n == arg || seen[n] {
			continue
		}
		seen[n] = true
		d := editDistance(arg, n)
		if strings.HasPrefix(n, arg) && len(arg) >= 3 {
			d = min(d, limit)
		}
		if d <= limit {
			near = append(near, scored{n, d})
		}
	}
	sort.Slice(near, func(i, j int) bool {
		if near[i].d != near[j].d {
			return near[i].d < near[j].d
		}
		return near[i].name < near[j].name
	})
	out := make([]string, 0, max)
	for i := 0; i < len(near) && i < max; i++ {
		out = append(out, near[i].name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
