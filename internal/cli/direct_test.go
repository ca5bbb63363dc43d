package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

const token = "cli-test-token-7f3a9c"

func run(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(Streams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }}, args)
	return code, out.String(), errb.String()
}

func TestProbeToolsAndCallAgainstAGoSDKServer(t *testing.T) {
	srv := mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.GoSDK, Tools: 30, PageSize: 10, RequireBearer: token, Name: "cli-peer", Version: "4.5.6"})
	env := map[string]string{"MCP_TOKEN": token}
	auth := []string{"--bearer-env", "MCP_TOKEN", "--allow-credential-over-http", "--allow-private-network"}

	code, out, errOut := run(t, env, append([]string{"probe", srv.URL}, auth...)...)
	if code != ExitOK {
		t.Fatalf("probe exit %d: %s", code, errOut)
	}
	for _, want := range []string{"cli-peer", "4.5.6", "PROTOCOL", "tools"} {
		if !strings.Contains(out, want) {
			t.Errorf("probe output lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = run(t, env, append([]string{"tools", srv.URL, "-o", "json"}, auth...)...)
	if code != ExitOK {
		t.Fatalf("tools exit %d: %s", code, errOut)
	}
	var tools resultListOf[toolOut]
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatalf("tools -o json is not JSON: %v\n%s", err, out)
	}
	if want := 30 + len(mcpserver.BuiltinTools()); len(tools.Items) != want || tools.Pages < 3 {
		t.Errorf("tools: got %d tools in %d pages, want %d tools over at least 3 pages", len(tools.Items), tools.Pages, want)
	}

	code, out, errOut = run(t, env, append([]string{"call", srv.URL, "echo", "--args", `{"text":"hello from the cli"}`}, auth...)...)
	if code != ExitOK || !strings.Contains(out, "hello from the cli") {
		t.Errorf("call echo: exit %d, out %q, err %q", code, out, errOut)
	}

	code, out, _ = run(t, env, append([]string{"call", srv.URL, "fail", "-o", "json"}, auth...)...)
	if code != ExitFailed {
		t.Errorf("call fail: exit %d, want %d", code, ExitFailed)
	}
	var res struct{ IsError bool }
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.IsError {
		t.Errorf("call fail -o json: isError not reported: %v %s", err, out)
	}
	if srv.Stats().LastCredential != "Bearer "+token {
		t.Errorf("the server did not see the bearer token from the environment")
	}
}

func TestCredentialFromAFileAndNeverEchoed(t *testing.T) {
	srv := mcpserver.Start(t, mcpserver.Options{RequireHeader: mcpserver.Header{Name: "X-Api-Key", Value: token}})
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, nil, "probe", srv.URL, "--header", "X-Api-Key", "--header-value-file", file, "--allow-credential-over-http", "--allow-private-network")
	if code != ExitOK {
		t.Fatalf("probe with a header credential: exit %d: %s", code, errOut)
	}
	// A wrong credential fails with the typed error, and neither it nor the
	// right one is printed.
	if err := os.WriteFile(file, []byte("wrong-"+token), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out2, errOut := run(t, nil, "probe", srv.URL, "--header", "X-Api-Key", "--header-value-file", file, "--allow-credential-over-http", "--allow-private-network")
	if code != ExitFailed {
		t.Fatalf("probe with a wrong credential: exit %d, want %d", code, ExitFailed)
	}
	if !strings.Contains(strings.ToLower(errOut), "unauthorized") {
		t.Errorf("the error does not say unauthorized: %s", errOut)
	}
	for _, s := range []string{out, out2, errOut} {
		if strings.Contains(s, token) {
			t.Errorf("the credential appears in the output: %s", s)
		}
	}
}

func TestRefusals(t *testing.T) {
	srv := mcpserver.Start(t, mcpserver.Options{})
	cases := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"credential over http without the opt-in", map[string]string{"T": token}, []string{"probe", srv.URL, "--bearer-env", "T", "--allow-private-network"}, ExitFailed, "http"},
		{"loopback without the opt-in", nil, []string{"probe", srv.URL}, ExitFailed, "address"},
		{"no URL", nil, []string{"probe"}, ExitUsage, "arg"},
		{"two credential sources", map[string]string{"T": token}, []string{"probe", srv.URL, "--bearer-env", "T", "--bearer-file", "x"}, ExitUsage, "at most one"},
		{"header without a value source", nil, []string{"probe", srv.URL, "--header", "X-Key"}, ExitUsage, "--header"},
		{"unset environment variable", nil, []string{"probe", srv.URL, "--bearer-env", "NOPE"}, ExitUsage, "NOPE"},
		{"arguments that are not an object", nil, []string{"call", srv.URL, "echo", "--args", "[1]", "--allow-private-network"}, ExitUsage, "JSON object"},
		{"unknown output", nil, []string{"probe", srv.URL, "-o", "xml"}, ExitUsage, "-o/--output"},
		{"a jsonpath that does not parse", nil, []string{"probe", srv.URL, "-o", "jsonpath={.a["}, ExitUsage, "-o/--output"},
		{"custom columns without a path", nil, []string{"tools", srv.URL, "-o", "custom-columns=NAME"}, ExitUsage, "custom-columns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := srv.Requests()
			code, _, errOut := run(t, c.env, c.args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d (want %d), stderr %q (want it to mention %q)", code, c.code, errOut, c.want)
			}
			if srv.Requests() != before {
				t.Errorf("a refused command still sent %d requests", srv.Requests()-before)
			}
		})
	}
}

// `tools URL` obeys the operator's catalog budget: against an amplifying
// server it stops at the page that crosses the budget instead of reading
// every page, and the budget can be raised or lowered by flag.
func TestToolsObeysTheCatalogBudget(t *testing.T) {
	srv := mcpserver.StartHostile(t, mcpserver.HostileOptions{Pages: 40})
	code, _, errOut := run(t, nil, "tools", srv.URL, "--allow-private-network")
	if code != ExitFailed || !strings.Contains(errOut, "catalog byte budget") {
		t.Fatalf("exit %d, stderr %q: want a failure naming the catalog budget", code, errOut)
	}
	if n := srv.PagesServed(); n >= 40 {
		t.Fatalf("read all %d pages before refusing", n)
	}
	before := srv.PagesServed()
	code, _, errOut = run(t, nil, "tools", srv.URL, "--allow-private-network", "--max-catalog-bytes", "300000")
	if code != ExitFailed || !strings.Contains(errOut, "limit 300000") {
		t.Fatalf("exit %d, stderr %q: want the lowered budget", code, errOut)
	}
	if n := srv.PagesServed() - before; n != 1 {
		t.Fatalf("a budget smaller than one page read %d pages", n)
	}

	small := mcpserver.StartHostile(t, mcpserver.HostileOptions{Pages: 2})
	code, out, errOut := run(t, nil, "tools", small.URL, "--allow-private-network", "-o", "json", "--max-definition-bytes", "65536")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var tools struct {
		Items   []toolOut         `json:"items"`
		Skipped []mcp.SkippedTool `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatal(err)
	}
	if len(tools.Items) != 0 || len(tools.Skipped) != 2*small.ToolsPerPage() {
		t.Fatalf("%d tools kept, %d skipped: every definition is over 64 KiB", len(tools.Items), len(tools.Skipped))
	}
}

// A refusal the command line can lift names the flag that lifts it, and
// only while that flag is not given; a refusal no flag lifts names none.
func TestRefusalsNameTheFlagThatLiftsThem(t *testing.T) {
	srv := mcpserver.Start(t, mcpserver.Options{RequireBearer: token})
	env := map[string]string{"MCP_TOKEN": token}
	const httpFlag, privateFlag = "--allow-credential-over-http", "--allow-private-network"
	for _, tc := range []struct {
		name  string
		args  []string
		names string
	}{
		{"a credential over plain http", []string{"call", srv.URL, "echo", "--bearer-env", "MCP_TOKEN", privateFlag}, httpFlag},
		{"a loopback address", []string{"call", srv.URL, "echo", "--bearer-env", "MCP_TOKEN", httpFlag}, privateFlag},
		{"both, one at a time", []string{"probe", srv.URL, "--bearer-env", "MCP_TOKEN"}, httpFlag},
		{"a loopback address, listing tools", []string{"tools", srv.URL}, privateFlag},
		{"the metadata address", []string{"probe", "http://169.254.169.254/mcp"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(t, env, tc.args...)
			if code != ExitFailed {
				t.Fatalf("exit %d, want %d: %s", code, ExitFailed, errOut)
			}
			for _, flag := range []string{httpFlag, privateFlag} {
				if named := strings.Contains(errOut, flag); named != (flag == tc.names) {
					t.Errorf("the error names %s: %t, want %t: %s", flag, named, flag == tc.names, errOut)
				}
			}
		})
	}
	if code, out, errOut := run(t, env, "call", srv.URL, "echo", "--args", `{"text":"through"}`, "--bearer-env", "MCP_TOKEN", httpFlag, privateFlag); code != ExitOK || !strings.Contains(out, "through") {
		t.Errorf("with both flags: exit %d, out %q, err %q", code, out, errOut)
	}
}
