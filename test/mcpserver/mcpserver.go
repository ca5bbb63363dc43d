// Package mcpserver gives tests the real MCP servers of
// internal/demoserver (go-sdk and mcp-go, with the same tools) and starts
// them for the duration of a test. The servers, their options and their
// statistics are documented in internal/demoserver; the names here are the
// same types, so a test and a demo binary run exactly the same server.
package mcpserver

import "github.com/mcp-catalog/operator/internal/demoserver"

type (
	// Flavor names the MCP library a server is written with.
	Flavor = demoserver.Flavor
	// Header is an HTTP header name and value.
	Header = demoserver.Header
	// Options configures a server.
	Options = demoserver.Options
	// Stats is what a server observed.
	Stats = demoserver.Stats
	// Server is a running MCP server.
	Server = demoserver.Server
)

// Flavors, path and the built-in tools; see internal/demoserver.
const (
	GoSDK = demoserver.GoSDK
	MCPGo = demoserver.MCPGo
	Path  = demoserver.Path

	ToolEcho         = demoserver.ToolEcho
	ToolFail         = demoserver.ToolFail
	ToolImageAndText = demoserver.ToolImageAndText
	ToolSlow         = demoserver.ToolSlow
	ToolNested       = demoserver.ToolNested

	FailText     = demoserver.FailText
	ImageCaption = demoserver.ImageCaption
	SlowDefault  = demoserver.SlowDefault
)

// New builds a server without listening; see demoserver.New.
func New(opts Options) (*Server, error) { return demoserver.New(opts) }

// BuiltinTools returns the names of the built-in tools, sorted.
func BuiltinTools() []string { return demoserver.BuiltinTools() }

// CatalogToolName is the name of the i-th generated catalog tool (from 1).
func CatalogToolName(i int) string { return demoserver.CatalogToolName(i) }

// TB is the part of testing.TB that Start uses; *testing.T, *testing.B and
// *testing.F satisfy it.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Start builds and serves a server on 127.0.0.1 for the duration of a test.
func Start(t TB, opts Options) *Server {
	t.Helper()
	s, err := demoserver.New(opts)
	if err != nil {
		t.Fatalf("mcpserver: %v", err)
	}
	if err := s.Listen(); err != nil {
		s.Close()
		t.Fatalf("mcpserver: listen: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}
