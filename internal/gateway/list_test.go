package gateway

import (
	"fmt"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// A tool's server is built once per version of the McpTool, shared by the
// calls made meanwhile, rebuilt when the tool changes, and the cache stays
// bounded however many tools are called.
func TestToolServersAreBuiltOncePerToolVersion(t *testing.T) {
	var c toolServers
	builds := 0
	build := func() *sdk.Server {
		builds++
		return sdk.NewServer(&sdk.Implementation{Name: "t", Version: "v"}, nil)
	}
	tool := func(name, rv string) *toolOffer {
		return &toolOffer{tool: &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, ResourceVersion: rv}}}
	}

	first := c.get(tool("docs.echo", "1"), build)
	if again := c.get(tool("docs.echo", "1"), build); again != first || builds != 1 {
		t.Fatalf("the same version built %d servers (same server: %t), want 1", builds, again == first)
	}
	if changed := c.get(tool("docs.echo", "2"), build); changed == first || builds != 2 {
		t.Fatalf("a new version of the tool reused its old server (builds %d)", builds)
	}
	if other := c.get(tool("docs.search", "1"), build); other == first || builds != 3 {
		t.Fatalf("another tool shared a server (builds %d)", builds)
	}
	none := c.get(nil, build)
	if c.get(nil, build) != none || builds != 4 {
		t.Fatalf("the server offering nothing was built %d times, want once", builds-3)
	}
	// The same tool shared into another namespace is another offer (its
	// name there differs), and a new version of the McpSharedServer is a
	// new version of the offer.
	shared := func(rv string) *toolOffer {
		o := tool("docs.echo", "1")
		o.shared = &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: "consumer", Name: "docs", ResourceVersion: rv}}
		return o
	}
	viaShared := c.get(shared("1"), build)
	if viaShared == first || builds != 5 {
		t.Fatalf("a shared tool reused its owner's server (builds %d)", builds)
	}
	if c.get(shared("2"), build) == viaShared || builds != 6 {
		t.Fatalf("a new version of the McpSharedServer reused the old server (builds %d)", builds)
	}
	builds = 4

	for i := range maxToolServers + 10 {
		c.get(tool(fmt.Sprintf("docs.t%d", i), "1"), build)
	}
	if len(c.m) > maxToolServers {
		t.Fatalf("%d servers kept, want at most %d", len(c.m), maxToolServers)
	}
}
