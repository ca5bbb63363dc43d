// Package mcp is the operator's client for remote Model Context Protocol
// servers reached over Streamable HTTP.
//
// It exists so that controllers (catalog import, health probes) and the tool
// gateway talk to untrusted remote servers through one hardened path. The
// package speaks both protocol eras: the legacy, handshake-based revisions
// 2025-03-26, 2025-06-18 and 2025-11-25 (initialize, notifications/initialized,
// optional Mcp-Session-Id, DELETE at the end) and the stateless 2026-07-28
// revision (server/discover, per-request _meta, Mcp-Method/Mcp-Name headers).
// Which era a server speaks is detected with the specification's dual-era rules
// and remembered per origin for a bounded time.
//
// Three operations are offered, each a single unit of work under one time
// budget: Probe (handshake only), ListTools (handshake and a paged tools/list,
// validated and normalised) and CallTool (handshake and one tools/call, never
// retried). ListenTools keeps a stream open instead, for servers that
// announce changes of their tools, bounded in bytes rather than time.
//
// Everything a server sends is treated as hostile input: bodies are capped,
// responses are validated strictly, redirects are never followed, credentials
// are attached only to the configured host, the dialer refuses link-local,
// metadata and (unless allowed) private addresses after DNS resolution, and
// failures come back as *Error values whose text never repeats the server's
// bytes or a credential. The package imports nothing from Kubernetes.
package mcp
