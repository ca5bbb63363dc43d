package safeurl

import (
	"strings"
	"testing"
)

func TestDisplayKeepsOnlySchemeHostAndPort(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/"},
		{"HTTPS://MCP.Example.com:8443/a/b?x=1", "https://mcp.example.com:8443/"},
		{"https://hooks.example.com/services/T000/B000/s3cr3tS3GMENT", "https://hooks.example.com/"},
		{"https://mcp.example.com/mcp?token=s3cr3tQUERY&x=1", "https://mcp.example.com/"},
		{"https://user:s3cr3tPASS@mcp.example.com/", "https://mcp.example.com/"},
		{"https://mcp.example.com/#s3cr3tFRAG", "https://mcp.example.com/"},
		{"http://[::1]:8080/mcp;s3cr3tPARAM", "http://[::1]:8080/"},
		{"mcp.example.com/s3cr3tNOSCHEME", Invalid},
		{"https://%zz/s3cr3tBAD", Invalid},
		{"mailto:s3cr3tOPAQUE@example.com", Invalid},
		{"", Invalid},
	} {
		got := Display(c.raw)
		if got != c.want {
			t.Errorf("Display(%q) = %q, want %q", c.raw, got, c.want)
		}
		if strings.Contains(got, "s3cr3t") {
			t.Errorf("Display(%q) = %q shows a secret part", c.raw, got)
		}
	}
}
