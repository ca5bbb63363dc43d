package mcp

import "github.com/mcp-catalog/operator/internal/secret"

// Credential is what the client attaches to each request of an operation.
// It lives in the leaf package secret, so that token exchange can produce
// one without depending on this client.
type Credential = secret.Credential
