// Package personauth is per-person upstream authorization (ADR 056): for
// an McpServer with spec.auth.perPerson the gateway is an OAuth client of
// the server's authorization server, each person authorizes the server
// once (authorization code with PKCE S256, the consent link handed to
// their agent), and the gateway keeps each person's tokens in a Secret of
// the server's namespace, refreshes them, and presents them on that
// person's calls only.
//
// What it keeps and how:
//   - The link's state is signed with a key derived from the gateway's
//     approval key (a key of its own purpose, so that no approval seal or
//     answer token can pass as a state, nor the reverse), binds the
//     namespace, server (and its UID), person, authorization server and
//     client, and expires; the PKCE verifier is derived from the state's
//     nonce under the same key, so it never travels and no replica keeps
//     anything between the link and the callback.
//   - The link leads to the gateway, not to the authorization server
//     (ADR 063): the browser signs in at the person's identity provider
//     (OpenID Connect), and is sent on only when the ID token names the
//     link's person; a cookie given when the link is followed, whose hash
//     every later state carries, keeps the sign-in and the consent in
//     that browser. Without a sign-in client no link is handed out.
//   - Tokens live in one Secret per server and person, named from a hash
//     of both, labelled, owned by the McpServer (deleted with it), and
//     never labelled as a credential, so that no McpServer can name it.
//   - No error, log line, Event or page holds a token, a code, a state or
//     the authorization server's own error text.
package personauth
