package manager

import (
	"errors"
	"testing"

	"k8s.io/client-go/rest"
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
