package mcp

// LegShareOf exposes, to the conformance checks, the share of the operation
// budget a leg's context was granted.
var LegShareOf = legShareOf
