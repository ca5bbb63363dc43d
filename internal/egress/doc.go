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
// which keeps one connection pool per Grant. A private CA bundle is parsed
// strictly into a CABundle with a stable key, and Trust gives, per bundle, a
// copy of an HTTP client that verifies servers against that bundle only,
// with the same dialer and pools, kept in a bounded cache by the key.
//
// The MCP client and the token exchange both dial through this package. It
// imports nothing from Kubernetes and nothing else of the operator's; a
// refused address is a *BlockedAddressError, and a failed certificate
// verification is told apart by IsVerificationFailure, which each user
// maps to its own error kind.
package egress
