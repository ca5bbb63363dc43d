// Package gateway serves enabled McpTools to in-cluster agents over MCP,
// behind one policy gate and one audit trail. No agent talks to a remote MCP
// server directly: it calls the gateway, which authenticates it (a
// ServiceAccount token checked by TokenReview), decides (enabled and Ready;
// Kubernetes RBAC; the data-class ceiling), applies the tool's argument
// rules, asks for human approval where required, writes an audit record
// before anything is sent, and then calls the remote tool with the
// server's credential or a token exchanged for the caller. Agents read each
// tool as its McpTool's spec presents it (reviewed text, fixed arguments
// hidden).
//
// A call goes through its stages in order, each in the file named for
// it and entered once: identify (identity.go), decide (decision.go),
// rules (rules.go), approve (approval.go), audit (audit.go), send (send.go)
// and record (observe.go). Gateway.call, in call.go, orchestrates them; the tool list
// (list.go) asks the same decision. Before any of it, a request is
// charged to budgets: a token whose review failed to its own record
// (ratelimit.go), an authenticated one to its ServiceAccount's and its
// namespace's request rate and concurrency (budget.go).
//
// The endpoint speaks the initialize-era revisions on sessions and the
// stateless 2026-07-28 revision; docs/gateway.md describes it from the
// agent's side and docs/adr/005-gateway-policy.md explains the policy.
package gateway
