// Package toolname derives the names of an imported tool: the name of its
// McpTool object and the name agents see. Both are pure functions of the
// McpServer's name and the remote tool's name, so a GitOps repository can
// declare an McpTool before the import creates it.
//
// The object name is "<server>.<encoded remote name>":
//
//   - A remote name in lowercase snake or kebab case — lowercase letters and
//     digits in runs joined by single "_" or "-" — is encoded readably:
//     "_" becomes "-" and "-" becomes "--". search_docs on server docs is the
//     object docs.search-docs; resolve-library-id is
//     docs.resolve--library--id.
//   - Any other legal remote name (upper case, dots, leading, trailing or
//     doubled separators) is encoded as "x." followed by the unpadded,
//     lowercase base32 of its bytes: createIssue on server docs is
//     docs.x.mnzgkylumvexg43vmu.
//
// The encoding is injective: server names are DNS labels and contain no
// dot, so the first dot separates the server; readable encodings contain no
// dot while base32 ones always do, and each is reversible on its own. Two
// different (server, remote name) pairs therefore never share an object
// name. Server names are limited to 45 characters so that the longest
// base32 form still fits the 253 characters of an object name.
//
// The local name, the one agents see, is "mcp_<server>_<remote name>" of at
// most 128 characters; this package alone says what a local name is and
// which object it belongs to.
package toolname

import (
	"encoding/base32"
	"fmt"
	"strings"
)

// MaxServerNameLength is the longest McpServer name for which every legal
// remote name yields a valid object name.
const MaxServerNameLength = 45

// MaxRemoteNameLength is the longest remote tool name accepted.
const MaxRemoteNameLength = 128

var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// The names are checked by hand rather than by regular expressions: the
// gateway checks a name on every call, and these loops cost a tenth of
// the matches (TestNamesMatchTheirPatterns holds them to the patterns).

// ValidRemoteName reports whether name is a legal remote tool name:
// [A-Za-z0-9_.-], 1 to 128 characters, case-sensitive.
func ValidRemoteName(name string) bool {
	return name != "" && len(name) <= MaxRemoteNameLength && nameChars(name)
}

// nameChars reports whether name is made of [A-Za-z0-9_.-] only.
func nameChars(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// ValidServerName reports whether name can be an McpServer's name: a DNS
// label, [a-z0-9] with inner "-", of at most MaxServerNameLength.
func ValidServerName(name string) bool {
	if name == "" || len(name) > MaxServerNameLength || name[0] == '-' || name[len(name)-1] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !lowerOrDigit(c) && c != '-' {
			return false
		}
	}
	return true
}

// readable reports whether a remote name is kept as it is in an object
// name: runs of [a-z0-9] joined by single "_" or "-".
func readable(name string) bool {
	if name == "" {
		return false
	}
	sep := true // a separator may not come first
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case lowerOrDigit(c):
			sep = false
		case (c == '_' || c == '-') && !sep:
			sep = true
		default:
			return false
		}
	}
	return !sep
}

func lowerOrDigit(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// ObjectName returns the McpTool object name for a remote tool of a server.
func ObjectName(server, remote string) (string, error) {
	if !ValidServerName(server) {
		return "", fmt.Errorf("server name %q is not a DNS label of at most %d characters", server, MaxServerNameLength)
	}
	if !ValidRemoteName(remote) {
		return "", fmt.Errorf("remote tool name is not [A-Za-z0-9_.-]{1,%d}", MaxRemoteNameLength)
	}
	return server + "." + encode(remote), nil
}

func encode(remote string) string {
	if readable(remote) {
		var b strings.Builder
		b.Grow(len(remote) + 8)
		for i := 0; i < len(remote); i++ {
			switch c := remote[i]; c {
			case '_':
				b.WriteByte('-')
			case '-':
				b.WriteString("--")
			default:
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	return "x." + b32.EncodeToString([]byte(remote))
}

// Decode returns the server and remote name an object name was derived
// from, or an error when name is not an object name this package produces.
func Decode(name string) (server, remote string, err error) {
	server, rest, ok := strings.Cut(name, ".")
	if !ok || !ValidServerName(server) || rest == "" {
		return "", "", fmt.Errorf("%q is not an McpTool name of the form <server>.<tool>", name)
	}
	if enc, ok := strings.CutPrefix(rest, "x."); ok {
		raw, err := b32.DecodeString(enc)
		if err != nil || !ValidRemoteName(string(raw)) || readable(string(raw)) {
			return "", "", fmt.Errorf("%q has no valid encoded tool name", name)
		}
		return server, string(raw), nil
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		switch {
		case strings.HasPrefix(rest[i:], "--"):
			b.WriteByte('-')
			i++
		case rest[i] == '-':
			b.WriteByte('_')
		default:
			b.WriteByte(rest[i])
		}
	}
	remote = b.String()
	if !readable(remote) || encode(remote) != rest {
		return "", "", fmt.Errorf("%q has no valid tool name", name)
	}
	return server, remote, nil
}

// MaxLocalNameLength is the longest local name. The MCP specification asks
// tool names to be at most 128 characters, so a tool whose local name would
// be longer is not imported and never served.
const MaxLocalNameLength = 128

const localPrefix = "mcp_"

// LocalName is the tool name agents see: mcp_<server>_<remote>. Server
// names contain no "_", so the first "_" after the prefix ends the server.
func LocalName(server, remote string) string { return localPrefix + server + "_" + remote }

// LocalNameFits reports whether the local name of a server's remote tool is
// at most MaxLocalNameLength characters: one that is not is never served.
func LocalNameFits(server, remote string) bool {
	return len(LocalName(server, remote)) <= MaxLocalNameLength
}

// ValidLocalName reports whether name has the characters and length of a
// local name: 1 to MaxLocalNameLength characters of [A-Za-z0-9_.-]. It says
// whether a name an agent sent may be quoted (in an audit record, say);
// ParseLocalName also checks the structure.
func ValidLocalName(name string) bool {
	return name != "" && len(name) <= MaxLocalNameLength && nameChars(name)
}

// errNotLocalName does not quote the name: it is an agent's input.
var errNotLocalName = fmt.Errorf("not a local tool name mcp_<server>_<tool> of at most %d characters", MaxLocalNameLength)

// ParseLocalName returns the server and remote name a local name was formed
// from, or an error when no served tool can have this local name.
func ParseLocalName(local string) (server, remote string, err error) {
	return parseName(local, localPrefix, errNotLocalName)
}

// parseName splits prefix<object>_<remote>, the shape of both kinds of
// local name, or returns notName.
func parseName(local, prefix string, notName error) (object, remote string, err error) {
	if !ValidLocalName(local) {
		return "", "", notName
	}
	rest, ok := strings.CutPrefix(local, prefix)
	if !ok {
		return "", "", notName
	}
	object, remote, ok = strings.Cut(rest, "_")
	if !ok || !ValidServerName(object) || !ValidRemoteName(remote) {
		return "", "", notName
	}
	return object, remote, nil
}

// ObjectNameOfLocal returns the name of the McpTool a local name belongs
// to, or an error when no served tool can have this local name.
func ObjectNameOfLocal(local string) (string, error) {
	server, remote, err := ParseLocalName(local)
	if err != nil {
		return "", err
	}
	return ObjectName(server, remote)
}

// Group is the group of a server's tools: mcp_<server>.
func Group(server string) string { return "mcp_" + server }

// sharedPrefix begins the local names of shared tools. A tool's own local
// name begins with "mcp_" and a server name, which holds no "_", so no
// shared name is ever an own one.
const sharedPrefix = "mcps_"

// SharedLocalName is the name agents of a consuming namespace see for a
// remote tool of a server shared with it through the McpSharedServer named
// shared: mcps_<shared>_<remote>. It is also the name the consuming
// namespace's RBAC grants (verb call on mcptools): McpTool names hold no
// "_", so it names none of the namespace's own tools.
func SharedLocalName(shared, remote string) string { return sharedPrefix + shared + "_" + remote }

// IsSharedLocalName reports whether name has the prefix of a shared tool's
// local name.
func IsSharedLocalName(name string) bool { return strings.HasPrefix(name, sharedPrefix) }

// ParseSharedLocalName returns the McpSharedServer and remote name a
// shared local name was formed from, or an error when no shared tool can
// have this name.
func ParseSharedLocalName(local string) (shared, remote string, err error) {
	return parseName(local, sharedPrefix, errNotSharedName)
}

var errNotSharedName = fmt.Errorf("not a shared tool name mcps_<shared server>_<tool> of at most %d characters", MaxLocalNameLength)
