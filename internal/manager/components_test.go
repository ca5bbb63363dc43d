package manager

import (
	"errors"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/mcp-catalog/operator/test/controlplane"
)

func TestComponentsSelectWhatAProcessRuns(t *testing.T) {
	for _, c := range []struct {
		in                   string
		controllers, gateway bool
	}{
		{"", true, true},
		{ComponentsAll, true, true},
		{ComponentsControllers, true, false},
		{ComponentsGateway, false, true},
	} {
		ctrls, gw, err := components(c.in)
		if err != nil || ctrls != c.controllers || gw != c.gateway {
			t.Errorf("components(%q) = %v, %v, %v; want %v, %v", c.in, ctrls, gw, err, c.controllers, c.gateway)
		}
	}
}

func TestNewRefusesUnknownComponents(t *testing.T) {
	opts := DefaultOptions()
	opts.Components = "gateways"
	if _, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, opts); !errors.Is(err, ErrUnknownComponents) {
		t.Fatalf("New with components %q: %v, want ErrUnknownComponents", opts.Components, err)
	}
}

// A gateway-only process never elects: asked to, with no lease namespace
// to be found outside a cluster, it still builds, where the controllers
// (which do elect) cannot.
func TestGatewayOnlyDoesNotElect(t *testing.T) {
	cfg := controlplane.Start(t).Config
	opts := DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.LeaderElect, opts.LeaderElectionNamespace = true, ""
	opts.GatewayAddr, opts.GatewayInsecure = "127.0.0.1:0", true

	opts.Components = ComponentsControllers
	if _, err := New(cfg, opts); err == nil {
		t.Fatal("the controllers built with leader election and no lease namespace; this test cannot tell electing from not")
	}
	opts.Components = ComponentsGateway
	if _, err := New(cfg, opts); err != nil {
		t.Fatalf("a gateway-only manager asked to elect: %v, want no election and no error", err)
	}
}

func TestNewRefusesABadShardSelector(t *testing.T) {
	opts := DefaultOptions()
	opts.Components = ComponentsControllers
	opts.WatchLabelSelector = "sharding.mcp.catalog.dev/key in (a"
	if _, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, opts); !errors.Is(err, ErrBadSelector) {
		t.Fatalf("New with selector %q: %v, want ErrBadSelector", opts.WatchLabelSelector, err)
	}
}

// A shard holds only its part of the McpTools; a gateway in the same
// process would refuse every other tool as unknown.
func TestNewRefusesAShardThatServesTheGateway(t *testing.T) {
	opts := DefaultOptions()
	opts.Components = ComponentsAll
	opts.GatewayAddr = "127.0.0.1:0"
	opts.WatchLabelSelector = "sharding.mcp.catalog.dev/key=shard1"
	if _, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, opts); !errors.Is(err, ErrShardedGateway) {
		t.Fatalf("New: %v, want ErrShardedGateway", err)
	}
}
