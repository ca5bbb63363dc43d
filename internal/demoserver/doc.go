// Package demoserver runs real MCP servers, written with the libraries of
// others, for the demo binaries and (through test/mcpserver) tests to talk
// to.
//
// A conformance check against a fake transport only proves that our client
// agrees with our own reading of the specification. These servers are built
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk) and with
// mcp-go (github.com/mark3labs/mcp-go), so a test that passes against them
// proves the client interoperates with implementations it did not write.
//
// Every server offers the same tools, whatever its flavor:
//
//   - a generated catalog of Options.Tools tools named tool_0001, tool_0002, …
//     (see [CatalogToolName]) for pagination and import tests;
//   - echo: returns its "text" argument as a text block;
//   - fail: returns a result with isError set and a fixed text;
//   - image_and_text: returns an image block followed by a text block;
//   - slow: blocks until the request's context ends, its "seconds" argument
//     elapses, or the server closes, and counts which of these happened;
//   - create_ticket: takes a nested object (with an array and an enum), and
//     carries schema keywords a normaliser is expected to drop.
//
// [StartHostile] is the exception: a hand-written server of the initialize
// era whose catalog is built to exhaust a client (pages near the read cap,
// deep schemas of long nested descriptions). It generates each page as it
// writes it, so that a benchmark measuring its own process sees the
// client's memory only.
//
// Every request passes through an HTTP layer of this package first. It counts
// requests and JSON-RPC methods, records the credential presented, enforces
// the credential the server requires (401 with WWW-Authenticate otherwise,
// before the library sees the request), and notices when a client abandons a
// request. See [Stats].
//
// # Protocol revisions each flavor speaks
//
// Both libraries (go-sdk v1.8.0, mcp-go v1.2.1) are dual-era: they implement
// the initialize handshake of 2024-11-05 through 2025-11-25 and the stateless
// 2026-07-28 revision (server/discover, protocol version in _meta,
// Mcp-Method/Mcp-Name headers). What a dual-era client ends up speaking
// depends on the mode; TestModesNegotiateAsDocumented (in test/mcpserver) checks this table with
// the official SDK's client:
//
//	flavor  mode              2026-07-28  initialize era       session id
//	go-sdk  Stateless         yes         up to 2025-11-25     never
//	go-sdk  stateful          no (1)      up to 2025-11-25     issued on initialize
//	mcp-go  Stateless         yes         up to 2025-11-25     never
//	mcp-go  stateful          yes (2)     up to 2025-11-25     issued on initialize
//	either  LegacyOnly        no (3)      up to 2025-11-25     as above
//	go-sdk  ProtocolVersions  if listed   the newest listed    as above (4)
//
// (1) go-sdk serves 2026-07-28 only on a stateless handler. A stateful one
// answers server/discover listing legacy versions only and rejects other
// modern requests with UnsupportedProtocolVersion (-32022) listing them.
//
// (2) mcp-go decides the era per request on the same endpoint: a modern
// request is served without a session even by a stateful server, so a
// 2026-capable client never receives a session id from it. Use LegacyOnly to
// get a session-issuing mcp-go peer for such a client.
//
// (3) LegacyOnly narrows the versions the library advertises and accepts
// (go-sdk: ServerOptions.SupportedProtocolVersions; mcp-go:
// WithStreamableHTTPProtocolVersions). A modern request is then answered
// with UnsupportedProtocolVersion listing the legacy versions, which tells a
// dual-era client to fall back to initialize.
//
// (4) ProtocolVersions narrows a go-sdk server to the listed revisions: an
// initialize asking for another is answered with the newest listed one (the
// lifecycle's version negotiation), and a later request whose
// MCP-Protocol-Version header names an unlisted revision is refused with
// 400. mcp-go's initialize negotiates every revision the library implements
// whatever the transport advertises, so the option is go-sdk only.
//
// Response bodies: go-sdk answers a call with text/event-stream unless
// Options.JSONResponse is set. mcp-go has no such switch: it answers with
// application/json and upgrades to an event stream only when the handler
// sends a notification, which these tools never do, so JSONResponse is
// ignored for mcp-go.
//
// Cancellation, when a client drops the HTTP request of a call (observed,
// and checked by the tests in test/mcpserver): mcp-go derives the tool handler's
// context from the HTTP request, so the handler is cancelled in every mode.
// go-sdk cancels it only for 2026-07-28 requests (this package sets
// StreamableHTTPOptions.PropagateRequestCancellation). For initialize-era
// requests go-sdk keeps the handler running: a stateful session until
// notifications/cancelled, a DELETE of the session, or the handler's end; a
// stateless server until the handler's end, because a notifications/cancelled
// lands in a fresh per-request session that does not know the call. In every
// mode Stats.Aborted counts the dropped request, which is the part a client
// controls; Close releases handlers still blocked.
package demoserver
