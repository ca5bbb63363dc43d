package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// A command's help lists its own flags first, then the twenty-odd flags
// that choose and reach the cluster (kubectl's), which every cluster
// command shares and few runs need. -n/--namespace stays with the
// command's own flags: most runs need it.

// kubeconfigFlags are the names of the flags genericclioptions adds,
// -n/--namespace excepted.
var kubeconfigFlags = func() map[string]bool {
	fs := pflag.NewFlagSet("kubeconfig", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(true).AddFlags(fs)
	names := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "namespace" {
			names[f.Name] = true
		}
	})
	return names
}()

// splitFlags divides a command's local flags into its own and the
// kubeconfig ones.
func splitFlags(cmd *cobra.Command) (own, kube *pflag.FlagSet) {
	own = pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	kube = pflag.NewFlagSet("kubeconfig", pflag.ContinueOnError)
	own.SortFlags, kube.SortFlags = cmd.LocalFlags().SortFlags, true
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if kubeconfigFlags[f.Name] {
			kube.AddFlag(f)
			return
		}
		own.AddFlag(f)
	})
	return own, kube
}

// usage writes a command's usage as cobra's default does, with the
// kubeconfig flags in a section of their own after the command's flags.
func usage(cmd *cobra.Command) error {
	w := cmd.OutOrStderr()
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("Usage:")
	if cmd.Runnable() {
		p("\n  %s", cmd.UseLine())
	}
	if cmd.HasAvailableSubCommands() {
		p("\n  %s [command]", cmd.CommandPath())
	}
	if len(cmd.Aliases) > 0 {
		p("\n\nAliases:\n  %s", cmd.NameAndAliases())
	}
	if cmd.HasExample() {
		p("\n\nExamples:\n%s", cmd.Example)
	}
	if cmd.HasAvailableSubCommands() {
		p("\n\nAvailable Commands:")
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				p("\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	own, kube := splitFlags(cmd)
	writeFlags(w, "Flags", own)
	writeFlags(w, "Kubeconfig Flags (choose and reach the cluster, as in kubectl)", kube)
	if cmd.HasAvailableInheritedFlags() {
		writeFlags(w, "Global Flags", cmd.InheritedFlags())
	}
	if cmd.HasAvailableSubCommands() {
		p("\n\nUse \"%s [command] --help\" for more information about a command.", cmd.CommandPath())
	}
	p("\n")
	return nil
}

func writeFlags(w io.Writer, title string, fs *pflag.FlagSet) {
	if !fs.HasAvailableFlags() {
		return
	}
	fmt.Fprintf(w, "\n\n%s:\n%s", title, strings.TrimRight(fs.FlagUsages(), " \t\n"))
}
