package mcp

import (
	"errors"
	"strings"
)

// MaxToolNameLength is the longest tool name accepted.
const MaxToolNameLength = 128

// ErrInvalidToolName is returned by CheckToolName.
var ErrInvalidToolName = errors.New("tool name must be 1 to 128 characters from A-Z a-z 0-9 _ . -")

// ValidToolName reports whether name matches [A-Za-z0-9_.-]{1,128}, the
// character set the MCP specification recommends for tool names. Names are
// case-sensitive. A name outside it is refused, never rewritten: a renamed
// tool would no longer round-trip to the server's own tools/call.
func ValidToolName(name string) bool {
	if len(name) == 0 || len(name) > MaxToolNameLength {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !toolNameByte(name[i]) {
			return false
		}
	}
	return true
}

// CheckToolName is ValidToolName as an error.
func CheckToolName(name string) error {
	if !ValidToolName(name) {
		return ErrInvalidToolName
	}
	return nil
}

func toolNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == '-'
}

// maxShownNameLength bounds how much of an invalid name is echoed into a
// SkippedTool, which ends up in status for a human to read.
const maxShownNameLength = 64

// printableName renders a name the server sent for display: valid names are
// returned unchanged; anything else keeps printable ASCII, replaces every
// other byte sequence with '?', and is cut to a bounded length with "..." so
// an invalid name can be recognised without carrying control characters or
// unbounded text.
func printableName(name string) string {
	if ValidToolName(name) {
		return name
	}
	var b strings.Builder
	n := 0
	for _, r := range name {
		if n == maxShownNameLength {
			b.WriteString("...")
			break
		}
		if r >= 0x20 && r < 0x7f {
			b.WriteRune(r)
		} else {
			b.WriteByte('?')
		}
		n++
	}
	return b.String()
}
