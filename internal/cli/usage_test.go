package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every subcommand's help lists its own flags, -n/--namespace among them,
// before the kubeconfig flags, which have a section of their own.
func TestHelpShowsOwnFlagsBeforeKubeconfigFlags(t *testing.T) {
	const kubeSection = "\nKubeconfig Flags"
	root := NewRootCommand(Streams{})
	withKube := 0
	for _, cmd := range root.Commands() {
		if !cmd.IsAvailableCommand() {
			continue
		}
		t.Run(cmd.Name(), func(t *testing.T) {
			code, out, errOut := run(t, nil, cmd.Name(), "--help")
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			flags := strings.Index(out, "\nFlags:\n")
			if flags < 0 {
				t.Fatalf("no Flags section:\n%s", out)
			}
			own := out[flags:]
			kube := ""
			if i := strings.Index(out, kubeSection); i >= 0 {
				if i < flags {
					t.Fatalf("the kubeconfig flags come before the command's own:\n%s", out)
				}
				own, kube = out[flags:i], out[i:]
				withKube++
			}
			cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
				in := own
				if kubeconfigFlags[f.Name] {
					in = kube
				}
				if !strings.Contains(in, "--"+f.Name+" ") && !strings.HasSuffix(strings.TrimSpace(in), "--"+f.Name) {
					t.Errorf("--%s is not in its section", f.Name)
				}
			})
			if kube != "" && (!strings.Contains(own, "--namespace") || strings.Contains(own, "--kubeconfig") || !strings.Contains(kube, "--kubeconfig")) {
				t.Errorf("sections:\nown:%s\nkubeconfig:%s", own, kube)
			}
		})
	}
	if withKube < 10 {
		t.Errorf("%d commands have a kubeconfig section; every cluster command should", withKube)
	}
}
