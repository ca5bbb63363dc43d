// Package oauthresource makes the gateway an OAuth 2.1 protected resource
// as the MCP authorization specification describes it (2025-06-18 and
// later): it publishes the resource's metadata (RFC 9728), writes the
// WWW-Authenticate challenges that point a client at it, and validates the
// OIDC JWT access tokens that administrator-configured issuers mint for the
// gateway's canonical resource URI (RFC 8707), mapping each onto a
// Kubernetes identity (username, groups, uid, extra) the way the API
// server's OIDC options do, so that every decision after it is the one a
// ServiceAccount gets.
//
// The JOSE work is done by libraries others maintain: go-jose parses the
// token and checks the claims' times and audience, go-oidc discovers each
// issuer and keeps its key set (fetched on first use, refetched when a
// token names a key it has not seen). The package adds what a resource
// server needs around them:
//   - an algorithm allow-list (asymmetric only: no "none", no HS*);
//   - a floor between two fetches of one issuer's keys, so that tokens
//     naming made-up key ids cannot make the gateway hammer the identity
//     provider;
//   - one typed error per way a token fails ([TokenError] with a
//     [Reason]), and a distinct [UnavailableError] when the identity
//     provider cannot be reached, which is not the token's fault (503 with
//     Retry-After, not 401);
//   - a bounded cache of validated tokens, keyed by the token's SHA-256
//     and kept until the token expires, so that a token seen before costs a
//     hash and a map lookup and no request to the identity provider.
//
// No error, log line or metric of this package carries a token.
package oauthresource
