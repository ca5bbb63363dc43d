// Package egress decides which addresses the operator may connect to on
// behalf of the people who write McpServers and McpDelegationProfiles, and
// builds the HTTP transports that enforce it.
//
// An address is public (always reachable), private (loopback, RFC 1918,
// unique-local, CGNAT: reachable only within the administrator's ranges,
// for a peer that opts in) or forbidden (link-local, cloud metadata,
// multicast, reserved: never). An IPv6 address that carries an IPv4 address
// is also judged as that address. The check runs on every address a name
// resolves to, before dialling by IP, and again right before connect(2).
//
// The administrator's Policy turns into a Grant for one peer (its namespace
// and opt-in); the Grant travels on the request's context to the Transport,
// which keeps one connection pool per Grant. Trust gives, per CA bundle, a
// copy of an HTTP client that verifies servers against that bundle only,
// with the same dialer and pools.
//
// The MCP client and the token exchange both dial through this package. It
// imports nothing from Kubernetes and neither of its users; a refused
// address is a *BlockedAddressError, which each user maps to its own error
// kind.
package egress
