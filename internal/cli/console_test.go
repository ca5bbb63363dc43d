package cli

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// noCluster is a client the command must not use: any call panics.
type noCluster struct{ client.WithWatch }

func TestConsoleRefusesAnAddressOtherMachinesCanReach(t *testing.T) {
	for _, addr := range []string{"0.0.0.0", "::", "192.0.2.7"} {
		var out, errb bytes.Buffer
		code := Run(Streams{In: strings.NewReader(""), Out: &out, Err: &errb,
			NewKubeClient: func() (client.Client, string) { return noCluster{}, "agents" }}, []string{"console", "--address", addr})
		if code != ExitUsage || !strings.Contains(errb.String(), "--address") || !strings.Contains(errb.String(), "loopback") {
			t.Errorf("console --address %s: exit %d, %q; want exit %d naming --address", addr, code, errb.String(), ExitUsage)
		}
		if out.Len() != 0 {
			t.Errorf("console --address %s printed a link: %q", addr, out.String())
		}
	}
}
