// Package inspect screens the text of a tool's result before an agent
// reads it, for what a result should not carry into a model's context:
// characters a person does not see (the drift package's hidden
// characters), text that addresses the model instead of informing it
// (instruction-like phrases, the drift detectors' vocabulary), and
// credentials in known formats (tokens of code hosts, chat and cloud
// providers, JWTs, private keys).
//
// Scan makes one pass over the text and allocates only for what it finds;
// the phrases are matched word by word on the fly rather than with regular
// expressions, so that screening costs a small constant per byte whatever
// the result says (docs/benchmarks.md). Findings carry a kind, a detail
// from a fixed vocabulary and where they are; never the text found, so
// that they can be audited and told to the agent.
//
// Apply carries out what an McpAccessPolicy asks for each kind: annotate
// (pass the text with a note that leads it), redact (replace what was
// found) or refuse (withhold the result).
//
// The package imports nothing of Kubernetes beyond the API types, and
// nothing of the gateway.
package inspect
