package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mcp-catalog/operator/test/mcpserver"
)

// resultListOf is a printed List: its items and the fields next to them.
type resultListOf[T any] struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []T    `json:"items"`
	Pages      int    `json:"pages"`
	Protocol   string `json:"protocolVersion"`
}

// printed is the apiVersion/kind/metadata every printed item carries.
type printed struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func TestOutputFormatsOfTheDirectCommands(t *testing.T) {
	srv := mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.GoSDK, Tools: 3, Name: "cli-peer", Version: "4.5.6"})
	direct := []string{"--allow-private-network"}
	want := 3 + len(mcpserver.BuiltinTools())
	runOK := func(t *testing.T, args ...string) string {
		t.Helper()
		code, out, errOut := run(t, nil, append(args, direct...)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}

	t.Run("probe -o json is a ProbeResult", func(t *testing.T) {
		var got struct {
			printed
			probeOut
		}
		out := runOK(t, "probe", srv.URL, "-o", "json")
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if got.APIVersion != ResultGroupVersion || got.Kind != "ProbeResult" || got.Metadata.Name != "cli-peer" || got.Version != "4.5.6" || got.ProtocolVersion == "" {
			t.Errorf("probe -o json: %+v", got)
		}
	})

	t.Run("probe -o yaml carries the same object", func(t *testing.T) {
		var got struct {
			printed
			probeOut
		}
		out := runOK(t, "probe", srv.URL, "-o", "yaml")
		if err := yaml.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, out)
		}
		if got.Kind != "ProbeResult" || got.Metadata.Name != "cli-peer" || !slices.Contains(got.Capabilities, "tools") {
			t.Errorf("probe -o yaml: %+v", got)
		}
	})

	t.Run("probe -o name, jsonpath, go-template and custom-columns", func(t *testing.T) {
		if out := runOK(t, "probe", srv.URL, "-o", "name"); out != "proberesult.cli.mcp.catalog.dev/cli-peer\n" {
			t.Errorf("-o name: %q", out)
		}
		if out := runOK(t, "probe", srv.URL, "-o", "jsonpath={.metadata.name} {.version}"); out != "cli-peer 4.5.6" {
			t.Errorf("-o jsonpath: %q", out)
		}
		if out := runOK(t, "probe", srv.URL, "-o", "go-template={{.metadata.name}}/{{.version}}"); out != "cli-peer/4.5.6" {
			t.Errorf("-o go-template: %q", out)
		}
		out := runOK(t, "probe", srv.URL, "-o", "custom-columns=SERVER:.metadata.name,VERSION:.version,MISSING:.nope")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "SERVER VERSION MISSING" || strings.Join(strings.Fields(lines[1]), " ") != "cli-peer 4.5.6 <none>" {
			t.Errorf("-o custom-columns:\n%s", out)
		}
	})

	t.Run("tools URL prints a List of Tools in every format", func(t *testing.T) {
		var list resultListOf[printed]
		out := runOK(t, "tools", srv.URL, "-o", "yaml")
		if err := yaml.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, out)
		}
		if list.APIVersion != ResultGroupVersion || list.Kind != "List" || len(list.Items) != want || list.Pages != 1 || list.Protocol == "" {
			t.Fatalf("tools -o yaml: %+v", list)
		}
		for _, it := range list.Items {
			if it.Kind != "Tool" || it.APIVersion != ResultGroupVersion || it.Metadata.Name == "" {
				t.Errorf("item %+v", it)
			}
		}
		names := strings.Fields(runOK(t, "tools", srv.URL, "-o", "name"))
		if len(names) != want || !slices.Contains(names, "tool.cli.mcp.catalog.dev/echo") {
			t.Errorf("-o name: %v", names)
		}
		jp := strings.Fields(runOK(t, "tools", srv.URL, "-o", "jsonpath={.items[*].metadata.name}"))
		if len(jp) != want || !slices.Contains(jp, "echo") {
			t.Errorf("-o jsonpath: %v", jp)
		}
		cc := strings.Split(strings.TrimSpace(runOK(t, "tools", srv.URL, "-o", "custom-columns=NAME:.metadata.name,KIND:.kind")), "\n")
		if len(cc) != want+1 || strings.Fields(cc[0])[0] != "NAME" || !slices.ContainsFunc(cc[1:], func(l string) bool { return strings.Join(strings.Fields(l), " ") == "echo Tool" }) {
			t.Errorf("-o custom-columns:\n%s", strings.Join(cc, "\n"))
		}
	})

	t.Run("tools URL: the table by default, hints with -o wide", func(t *testing.T) {
		table := runOK(t, "tools", srv.URL)
		wide := runOK(t, "tools", srv.URL, "-o", "wide")
		if !strings.HasPrefix(table, "NAME") || strings.Contains(table, "HINTS") || !strings.Contains(wide, "HINTS") {
			t.Errorf("table:\n%s\nwide:\n%s", table, wide)
		}
	})

	t.Run("call -o yaml is a CallResult", func(t *testing.T) {
		var got struct {
			printed
			callOut
		}
		out := runOK(t, "call", srv.URL, "echo", "--args", `{"text":"yaml please"}`, "-o", "yaml")
		if err := yaml.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, out)
		}
		if got.Kind != "CallResult" || got.Metadata.Name != "echo" || got.IsError || !strings.Contains(got.Text, "yaml please") {
			t.Errorf("call -o yaml: %+v", got)
		}
	})
}

// unreachableKubeconfig is a kubeconfig whose cluster listens nowhere.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: someone
  user: {token: not-a-secret}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: someone, namespace: agents}
current-context: nowhere
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExitCodes holds every command to the same rule: 2 when the command
// line is wrong (and nothing is contacted), 1 when the operation ran and
// failed.
func TestExitCodes(t *testing.T) {
	srv := mcpserver.Start(t, mcpserver.Options{})
	kc := unreachableKubeconfig(t)
	const down = "http://127.0.0.1:1/mcp"
	usage := []struct {
		name string
		args []string
	}{
		{"unknown command", []string{"nope"}},
		{"unknown root flag", []string{"--nope"}},
		{"probe: unknown flag", []string{"probe", srv.URL, "--nope"}},
		{"probe: bad -o", []string{"probe", srv.URL, "-o", "xml"}},
		{"probe: bad --timeout", []string{"probe", srv.URL, "--timeout", "soon"}},
		{"probe: no URL", []string{"probe"}},
		{"tools: unknown flag", []string{"tools", srv.URL, "--nope"}},
		{"tools: two arguments", []string{"tools", "a", "b"}},
		{"tools: bad -o", []string{"tools", "--kubeconfig", kc, "-o", "xml"}},
		{"tools: a URL with --mcp-server", []string{"tools", srv.URL, "--mcp-server", "x"}},
		{"tools: not a URL, not a name", []string{"tools", "ftp://x/y", "--kubeconfig", kc}},
		{"call: unknown flag", []string{"call", srv.URL, "echo", "--nope"}},
		{"call: one argument", []string{"call", srv.URL}},
		{"call: arguments not an object", []string{"call", srv.URL, "echo", "--args", "[]"}},
		{"import: unknown flag", []string{"import", "x", "--nope"}},
		{"import: neither names nor --all", []string{"import", "--kubeconfig", kc}},
		{"import: bad -o", []string{"import", "x", "--kubeconfig", kc, "-o", "jsonpath={"}},
		{"test: unknown flag", []string{"test", "x", "--nope"}},
		{"test: names and --all", []string{"test", "x", "--all", "--kubeconfig", kc}},
		{"enable: unknown flag", []string{"enable", "x", "--nope"}},
		{"enable: no tool", []string{"enable"}},
		{"enable: bad -o", []string{"enable", "x", "--kubeconfig", kc, "-o", "custom-columns="}},
		{"disable: unknown flag", []string{"disable", "x", "--nope"}},
		{"disable: no tool", []string{"disable"}},
		{"approve: unknown flag", []string{"approve", "x", "--nope"}},
		{"approve: no tool", []string{"approve"}},
		{"version: an argument", []string{"version", "x"}},
	}
	for _, c := range usage {
		t.Run("usage/"+c.name, func(t *testing.T) {
			before := srv.Requests()
			code, _, errOut := run(t, nil, c.args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d; stderr %s", code, ExitUsage, errOut)
			}
			if srv.Requests() != before {
				t.Errorf("a usage error still reached the server")
			}
		})
	}

	failed := []struct {
		name, want string
		args       []string
	}{
		{"probe: server unreachable", "", []string{"probe", down, "--allow-private-network", "--timeout", "5s"}},
		{"tools URL: server unreachable", "", []string{"tools", down, "--allow-private-network", "--timeout", "5s"}},
		{"call: server unreachable", "", []string{"call", down, "echo", "--allow-private-network", "--timeout", "5s"}},
		{"tools: cluster unreachable", "check --kubeconfig/--context", []string{"tools", "--kubeconfig", kc}},
		{"tools SERVER: cluster unreachable", "check --kubeconfig/--context", []string{"tools", "tickets", "--kubeconfig", kc}},
		{"import: cluster unreachable", "check --kubeconfig/--context", []string{"import", "tickets", "--kubeconfig", kc, "--timeout", "5s"}},
		{"test: cluster unreachable", "check --kubeconfig/--context", []string{"test", "--all", "--kubeconfig", kc}},
		{"enable: cluster unreachable", "check --kubeconfig/--context", []string{"enable", "tickets.search", "--kubeconfig", kc}},
		{"disable: cluster unreachable", "check --kubeconfig/--context", []string{"disable", "tickets/search", "--kubeconfig", kc}},
		{"approve: cluster unreachable", "check --kubeconfig/--context", []string{"approve", "tickets.search", "--kubeconfig", kc}},
		{"a missing kubeconfig", "--kubeconfig", []string{"tools", "--kubeconfig", filepath.Join(t.TempDir(), "missing")}},
	}
	for _, c := range failed {
		t.Run("failed/"+c.name, func(t *testing.T) {
			code, _, errOut := run(t, nil, c.args...)
			if code != ExitFailed || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d (want %d), stderr %q (want it to mention %q)", code, ExitFailed, errOut, c.want)
			}
		})
	}
}

func TestCompletionExecutableNameAndScript(t *testing.T) {
	if got := Args("/usr/local/bin/kubectl_complete-mcp", []string{"import", "ti"}); !slices.Equal(got, []string{"__complete", "import", "ti"}) {
		t.Errorf("as kubectl_complete-mcp: %v", got)
	}
	if got := Args("kubectl_complete-mcp.exe", []string{""}); !slices.Equal(got, []string{"__complete", ""}) {
		t.Errorf("as kubectl_complete-mcp.exe: %v", got)
	}
	if got := Args("kubectl-mcp", []string{"import", "ti"}); !slices.Equal(got, []string{"import", "ti"}) {
		t.Errorf("as kubectl-mcp: %v", got)
	}
	// The script shipped for kubectl hands its words to the plugin's
	// completion command.
	script, err := os.ReadFile(filepath.Join("..", "..", "cmd", "kubectl-mcp", CompletionExecutable))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), `kubectl-mcp __complete "$@"`) {
		t.Errorf("the completion script does not call kubectl-mcp __complete:\n%s", script)
	}
}

func TestUsageSaysKubectlMcp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"probe", "--help"}, {"tools", "--help"}, {"import", "--help"}} {
		code, out, _ := run(t, nil, args...)
		if code != ExitOK || !strings.Contains(out, "kubectl mcp") || strings.Contains(out, "kubectl-mcp ") {
			t.Errorf("%v: exit %d:\n%s", args, code, out)
		}
	}
	_, out, _ := run(t, nil, "tools", "--help")
	if !strings.Contains(out, "kubectl mcp tools [SERVER | URL] [flags]") || !strings.Contains(out, "  kubectl mcp tools tickets -o wide") {
		t.Errorf("tools usage and examples:\n%s", out)
	}
}
