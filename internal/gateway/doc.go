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
// Every request passes one front door (wire.go) in one order: identify
// (the token looked at, tokenshape.go, then reviewed, identity.go),
// budget (requests, bytes answered and bytes held, budget.go and
// wire.go), read (the body once, bounded, taken apart once), decide once
// (decision.go). The plain requests of every era are answered there by
// the gateway's own code (callfast.go, listfast.go); anything else goes to
// the go-sdk with a server offering only what it names (list.go). A call
// then goes through its stages in order, each in the file named for it
// and entered once: rules (rules.go), approve (approval.go), audit
// (audit.go), send (send.go) and record (observe.go); callDecided, in
// call.go, orchestrates them, and the tool list asks the same decision.
//
// The endpoint speaks the initialize-era revisions, with or without
// sessions kept here, and the stateless 2026-07-28 revision;
// docs/gateway.md describes it from the agent's side,
// docs/adr/042-one-front-door.md the front door and
// docs/adr/005-gateway-policy.md the policy.
package gateway
