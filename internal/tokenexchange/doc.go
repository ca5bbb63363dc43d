// Package tokenexchange is the operator's OAuth 2.0 Token Exchange client
// (RFC 8693). It trades an actor's subject token for an access token scoped
// to one MCP server (audience, scopes and the RFC 8707 resource), so that a
// delegated tool call carries the actor's rights rather than the operator's.
//
// The package exists as a separate, Kubernetes-free unit so that the policy
// and the wire handling can be tested exhaustively on their own; a controller
// resolves Secrets and the McpDelegationProfile and calls Exchange.
//
// What it guarantees:
//   - Policy first: an audience or scope outside the profile's and the
//     actor's allowed sets is refused before any byte is sent.
//   - Transport: https only unless Options.AllowHTTP; redirects are never
//     followed; response bodies are capped; the caller's context bounds the
//     exchange, with Options.Timeout as a ceiling.
//   - Strict responses: a success must be a JSON object with a bearer-usable
//     access_token, a known issued_token_type, token_type Bearer or N_A and a
//     sane expires_in; a granted scope wider than policy is refused.
//   - Secrets (client secret, subject token, issued token) travel in
//     secret.Secret and never appear in an error, log or fmt output; error text
//     is fixed, client-authored wording and never repeats the server's bytes.
package tokenexchange
