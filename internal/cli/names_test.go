package cli

import (
	"errors"
	"slices"
	"testing"
)

func TestResolveToolTakesEveryFormOfAName(t *testing.T) {
	for arg, want := range map[string]string{
		"tickets.create-ticket":     "tickets.create-ticket",
		"tickets/create_ticket":     "tickets.create-ticket",
		"mcp_tickets_create_ticket": "tickets.create-ticket",
		"mcp_docs_createIssue":      "docs.x.mnzgkylumvexg43vmu",
	} {
		got, err := resolveTool(arg)
		if err != nil || got != want {
			t.Errorf("resolveTool(%q) = %q, %v; want %q", arg, got, err, want)
		}
	}
	// A shared tool is enabled and approved by its owner, and a malformed
	// agent name is the command line's mistake.
	for _, arg := range []string{"mcps_platform-docs_search_docs", "mcp_", "mcp_docs"} {
		_, err := resolveTool(arg)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != ExitUsage {
			t.Errorf("resolveTool(%q) = %v, want a usage error", arg, err)
		}
	}
}

func TestNearNames(t *testing.T) {
	names := []string{"mcp_demo_echo", "mcp_demo_slow", "mcp_demo_fail", "mcp_demo_tool_0001", "mcp_demo_tool_0002", "mcp_other_echo"}
	for _, tc := range []struct {
		arg  string
		want []string
	}{
		{"mcp_demo_ecoh", []string{"mcp_demo_echo"}},
		{"mcp_demo_echo", nil},
		{"mcp_demo_slo", []string{"mcp_demo_slow"}},
		{"mcp_demo_tool", []string{"mcp_demo_tool_0001", "mcp_demo_tool_0002"}},
		{"mcp_demo_tool_000", []string{"mcp_demo_tool_0001", "mcp_demo_tool_0002"}},
		{"something_else", nil},
	} {
		if got := nearNames(tc.arg, names, maxSuggestions); !slices.Equal(got, tc.want) {
			t.Errorf("nearNames(%q) = %v, want %v", tc.arg, got, tc.want)
		}
	}
	if got := nearNames("mcp_demo_tool_000", append(names, "mcp_demo_tool_0003", "mcp_demo_tool_0004"), maxSuggestions); len(got) != maxSuggestions {
		t.Errorf("nearNames offers %d names, want at most %d", len(got), maxSuggestions)
	}
}
