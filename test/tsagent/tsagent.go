// Package tsagent runs the tests' TypeScript MCP agent: agent.mjs, a client
// written with the official TypeScript SDK (@modelcontextprotocol/sdk),
// which hack/tsagent.sh installs from the npm registry. It lets a test prove
// that a client other than the go-sdk is served, as that client sends it.
//
// The SDK's directory is TSAGENT_DIR (make test sets it); without it, the
// first Run runs hack/tsagent.sh, found from the working directory up, so
// `go test` of a package works on a machine with only Node.js and npm.
package tsagent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

//go:embed agent.mjs
var script []byte

// Step is one thing the agent does once connected; see the constructors.
type Step struct {
	Op        string         `json:"op"`
	Name      string         `json:"name,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
	N         int            `json:"n,omitempty"`
	// EveryMs paces calls; Concurrency and Ms shape lists.
	EveryMs     int64 `json:"everyMs,omitempty"`
	Concurrency int   `json:"concurrency,omitempty"`
	Ms          int64 `json:"ms,omitempty"`
	// Progress asks a call for progress (CallWithProgress).
	Progress bool `json:"progress,omitempty"`
}

// List lists the tools offered.
func List() Step { return Step{Op: "list"} }

// Call calls a tool.
func Call(name string, args map[string]any) Step {
	return Step{Op: "call", Name: name, Arguments: args}
}

// CallWithProgress calls a tool with a progress token; the outcome's
// Progress holds the notifications the SDK handed the agent.
func CallWithProgress(name string, args map[string]any) Step {
	return Step{Op: "call", Name: name, Arguments: args, Progress: true}
}

// TaskCall calls a tool through the SDK's experimental tasks API: as a
// task when the server declares tasks for tools/call and a List before it
// showed the tool taking them, else plainly. The outcome's Task says which.
func TaskCall(name string, args map[string]any) Step {
	return Step{Op: "task", Name: name, Arguments: args}
}

// Ping pings the server.
func Ping() Step { return Step{Op: "ping"} }

// Calls calls a tool n times in a row, after one untimed call, and reports
// the median and 95th percentile of their latencies.
func Calls(name string, args map[string]any, n int) Step {
	return Step{Op: "calls", Name: name, Arguments: args, N: n}
}

// PacedCalls calls a tool n times, one call every interval from the
// first (after one untimed call), as an agent that calls now and then. A
// call that fails, the untimed one included, is counted in Failed (the
// first's message in FirstError) and the next one made.
func PacedCalls(name string, args map[string]any, n int, every time.Duration) Step {
	return Step{Op: "calls", Name: name, Arguments: args, N: n, EveryMs: every.Milliseconds()}
}

// Lists lists the tools with concurrency lists in flight at once, each on a
// connection of its own, each listing again as soon as it returned, for d.
// A list that fails is counted in Failed and the next one made.
func Lists(concurrency int, d time.Duration) Step {
	return Step{Op: "lists", Concurrency: concurrency, Ms: d.Milliseconds()}
}

// Terminate ends the session with an HTTP DELETE, as a client that leaves
// should.
func Terminate() Step { return Step{Op: "terminate"} }

// Result is what the agent saw.
type Result struct {
	Connect Connect
	// Steps holds one outcome per step, in order; none when Connect failed.
	Steps []Outcome
	HTTP  HTTP
	// BrowserError is what the browser (Options.OAuth) failed at after the
	// agent had ended, such as a redirect to a listener already closed.
	BrowserError string
}

// Connect is the outcome of initialize.
type Connect struct {
	Error *Error `json:"error"`
	// ProtocolVersion is the revision negotiated.
	ProtocolVersion string `json:"protocolVersion"`
	// SessionID says whether the server gave an Mcp-Session-Id.
	SessionID bool `json:"sessionId"`
	Server    struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	// OAuth is what the SDK's OAuth flow did, when Options.OAuth was set.
	OAuth *OAuthOutcome `json:"oauth"`
}

// OAuthOutcome is what the SDK's OAuth client flow did.
type OAuthOutcome struct {
	// Authorizations are the authorization requests the SDK sent the
	// person's browser with, as their parameters said.
	Authorizations []Authorization `json:"authorizations"`
	// TokenType is the token type of the tokens the SDK obtained.
	TokenType string `json:"tokenType"`
	// Registered is the client ID the SDK registered itself (RFC 7591),
	// when OAuth.ClientID was empty.
	Registered string `json:"registered"`
}

// Authorization is one authorization request of the SDK.
type Authorization struct {
	// Resource is its RFC 8707 resource parameter.
	Resource string `json:"resource"`
	Scope    string `json:"scope"`
	// CodeChallengeMethod is PKCE's (S256).
	CodeChallengeMethod string `json:"codeChallengeMethod"`
	// State says whether it carried the agent's state.
	State bool `json:"state"`
}

// Outcome is the outcome of one step. Error is set when the step failed;
// the other fields are those of its op.
type Outcome struct {
	Op    string `json:"op"`
	Error *Error `json:"error"`
	// Tools are the names listed (list).
	Tools []string `json:"tools"`
	// TaskSupport is, by name, each listed tool's execution.taskSupport,
	// for the tools that had one (list).
	TaskSupport map[string]string `json:"taskSupport"`
	// Task is the task a TaskCall was made as: its id (empty when the
	// call was made plainly) and the statuses the SDK saw, in order.
	Task *Task `json:"task"`
	// IsError and Content are the call's result (call).
	IsError bool      `json:"isError"`
	Content []Content `json:"content"`
	// StructuredContent is the call's structured result, as the SDK's
	// client passed it on after checking it against the tool's listed
	// output schema; empty when there was none.
	StructuredContent json.RawMessage `json:"structuredContent"`
	// Elicitations are the requests for input the agent was asked during
	// the call (Options.Elicit).
	Elicitations []Elicitation `json:"elicitations"`
	// Progress are the progress notifications of a call asked for them
	// (CallWithProgress), each [progress, total] (total null when unsaid).
	Progress [][2]*float64 `json:"progress"`
	// N, Failed, P50us and P95us are the timed calls' count, how many
	// returned isError (or, paced, failed), and their latencies in
	// microseconds (calls); for lists, the lists that succeeded, those that
	// failed, and the latencies of the former.
	N      int   `json:"n"`
	Failed int   `json:"failed"`
	P50us  int64 `json:"p50us"`
	P95us  int64 `json:"p95us"`
	// Listed is how many tools the last list that succeeded named (lists).
	Listed int `json:"listed"`
	// FirstError is the message of the first call or list that failed
	// (paced calls, lists).
	FirstError string `json:"firstError"`
}

// Elicitation is one request for input the agent answered.
type Elicitation struct {
	// Mode is "form" or "url".
	Mode string `json:"mode"`
	// Fields are the names of a form's fields.
	Fields []string `json:"fields"`
	// URL is where a URL elicitation sends the user.
	URL *string `json:"url"`
}

// Text joins the text content of a call's result.
func (o Outcome) Text() string {
	var b strings.Builder
	for _, c := range o.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// Content is a content block of a call's result.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// Data and MimeType are an image's or audio's (base64, as sent).
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// Error is an error the SDK reported: a JSON-RPC error's code, or for a
// failed HTTP exchange its status; Code is nil for other errors.
type Error struct {
	Code    *int   `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Code == nil {
		return e.Message
	}
	return fmt.Sprintf("%s (code %d)", e.Message, *e.Code)
}

// HTTP is what the agent sent over HTTP.
type HTTP struct {
	// Requests are the first 100 requests, in the order they were sent.
	Requests []Request `json:"requests"`
	// RequestCount counts them all.
	RequestCount int `json:"requestCount"`
	// Errors are the errors the SDK reported outside a step, such as a
	// failed GET for the server's event stream.
	Errors []Error `json:"errors"`
}

// Request is one HTTP request the agent made.
type Request struct {
	Method string `json:"method"`
	// Path is the URL's path (the agent's requests to the authorization
	// server are among them).
	Path string `json:"path"`
	// RPC is the JSON-RPC method of a POSTed request or notification.
	RPC string `json:"rpc"`
	// SessionID says whether it carried an Mcp-Session-Id.
	SessionID bool `json:"sessionId"`
	// ProtocolVersion is its MCP-Protocol-Version header.
	ProtocolVersion string `json:"protocolVersion"`
	// Status is the response's, 0 when none came before the agent ended.
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
}

// Run connects to the MCP endpoint url presenting token as a bearer token
// (none when empty), runs the steps and returns what the agent saw. A step
// that fails is an outcome, not an error; so is a failed connection. The
// error is for an agent that could not run.
func Run(ctx context.Context, url, token string, steps ...Step) (*Result, error) {
	a, err := Start(ctx, url, token, Options{}, steps...)
	if err != nil {
		return nil, err
	}
	return a.Wait()
}

// Options say how the agent's process is run.
type Options struct {
	// Wrapper is a command line node is run under, such as
	// {"nice", "-n", "19"}: every thread of the agent inherits what it
	// sets. Empty runs node itself.
	Wrapper []string
	// OAuth, with no token, makes the agent obtain one with the SDK's own
	// OAuth client flow.
	OAuth *OAuth
	// Elicit makes the agent declare elicitation (form and URL modes) and
	// answer every request for input with this result (an ElicitResult:
	// "action", and "content" for a form accepted).
	Elicit map[string]any
	// Origins sends the agent's requests for one origin (scheme, host and
	// port, e.g. "http://localhost") to another, as a load balancer at the
	// first name would: the agent connects to the URL a resource is named
	// by while the server listens elsewhere.
	Origins map[string]string
}

// OAuth is what the agent's OAuth client flow needs: its client, and the
// person's browser.
type OAuth struct {
	// ClientID is a public client registered in advance at the
	// authorization server. Empty, the SDK registers one itself at the
	// server's registration endpoint (RFC 7591).
	ClientID string
	// Browser opens an authorization URL as the person's browser would,
	// signing in, until the authorization server redirects to the agent's
	// redirect URI. An error stops the agent.
	Browser func(ctx context.Context, authorizationURL string) error
	// RootCAs is PEM the agent trusts besides Node's roots (the
	// authorization server's certificate).
	RootCAs string
}

// Agent is an agent that was started; Wait for what it saw.
type Agent struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	path           string
	// browsing ends when the browser has opened every authorization URL;
	// browserErr is the first error it had.
	browsing   chan struct{}
	browserErr error
	cleanup    func()
}

// Start starts the agent as Run does, without waiting for it.
func Start(ctx context.Context, url, token string, opts Options, steps ...Step) (*Agent, error) {
	path, err := agentPath()
	if err != nil {
		return nil, err
	}
	in, err := json.Marshal(steps)
	if err != nil {
		return nil, err
	}
	args := append(append([]string{}, opts.Wrapper...), "node", path, url)
	a := &Agent{cmd: exec.CommandContext(ctx, args[0], args[1:]...), path: path}
	// The token goes in the environment, not on the command line, where
	// every process could read it.
	a.cmd.Env = append(os.Environ(), "MCP_TOKEN="+token)
	a.cmd.Stdin = bytes.NewReader(in)
	a.cmd.Stdout, a.cmd.Stderr = &a.stdout, &a.stderr
	a.cleanup = func() {}
	if opts.Elicit != nil {
		e, err := json.Marshal(opts.Elicit)
		if err != nil {
			return nil, err
		}
		a.cmd.Env = append(a.cmd.Env, "MCP_ELICIT="+string(e))
	}
	if len(opts.Origins) > 0 {
		o, err := json.Marshal(opts.Origins)
		if err != nil {
			return nil, err
		}
		a.cmd.Env = append(a.cmd.Env, "MCP_ORIGINS="+string(o))
	}
	var authURLs *os.File
	if opts.OAuth != nil {
		var err error
		if authURLs, err = a.oauth(opts.OAuth); err != nil {
			return nil, err
		}
	}
	if err := a.cmd.Start(); err != nil {
		a.cleanup()
		return nil, fmt.Errorf("tsagent: %s: %w", strings.Join(args[:len(args)-1], " "), err)
	}
	if authURLs != nil {
		a.browse(ctx, authURLs, opts.OAuth.Browser)
	}
	return a, nil
}

// oauth prepares the agent's OAuth flow: its client and trusted roots in
// the environment, and a pipe on its file descriptor 3 for the
// authorization URLs, whose reading end it returns.
func (a *Agent) oauth(o *OAuth) (*os.File, error) {
	conf, err := json.Marshal(map[string]string{"clientId": o.ClientID})
	if err != nil {
		return nil, err
	}
	a.cmd.Env = append(a.cmd.Env, "MCP_OAUTH="+string(conf))
	var files []string
	if o.RootCAs != "" {
		f, err := os.CreateTemp("", "tsagent-roots-*.pem")
		if err != nil {
			return nil, fmt.Errorf("tsagent: %w", err)
		}
		files = append(files, f.Name())
		_, werr := f.WriteString(o.RootCAs)
		if err := errors.Join(werr, f.Close()); err != nil {
			_ = os.Remove(f.Name())
			return nil, fmt.Errorf("tsagent: %w", err)
		}
		a.cmd.Env = append(a.cmd.Env, "NODE_EXTRA_CA_CERTS="+f.Name())
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("tsagent: %w", err)
	}
	a.cmd.ExtraFiles = []*os.File{w}
	a.cleanup = func() {
		_ = w.Close()
		for _, f := range files {
			_ = os.Remove(f)
		}
	}
	return r, nil
}

// browse opens each authorization URL the agent writes with the browser;
// a failure stops the agent, which would otherwise wait for a redirect
// that never comes.
func (a *Agent) browse(ctx context.Context, urls *os.File, browser func(context.Context, string) error) {
	// The agent holds the writing end now; the reader sees the end of the
	// file when it exits.
	_ = a.cmd.ExtraFiles[0].Close()
	a.browsing = make(chan struct{})
	go func() {
		defer close(a.browsing)
		defer urls.Close()
		lines := bufio.NewScanner(urls)
		for lines.Scan() {
			if a.browserErr != nil {
				continue
			}
			if err := browser(ctx, lines.Text()); err != nil {
				a.browserErr = err
				_ = a.cmd.Process.Kill()
			}
		}
	}()
}

// Wait waits for the agent to end and returns what it saw.
func (a *Agent) Wait() (*Result, error) {
	err := a.cmd.Wait()
	if a.browsing != nil {
		<-a.browsing
	}
	a.cleanup()
	if err != nil && a.browserErr != nil {
		return nil, fmt.Errorf("tsagent: the browser, at the authorization URL: %w", a.browserErr)
	}
	if err != nil {
		return nil, fmt.Errorf("tsagent: node %s: %w; stderr:\n%s", filepath.Base(a.path), err, a.stderr.String())
	}
	r, err := parse(a.stdout.Bytes())
	if err != nil {
		return nil, err
	}
	if a.browserErr != nil {
		// The agent ended by itself, before the browser was done: an
		// authorization it no longer waited for.
		r.BrowserError = a.browserErr.Error()
	}
	return r, nil
}

// parse reads the agent's lines: connect, one per step, http.
func parse(out []byte) (*Result, error) {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) < 2 {
		return nil, fmt.Errorf("tsagent: expected at least 2 lines of output, got %q", out)
	}
	r := &Result{}
	if err := json.Unmarshal(lines[0], &r.Connect); err != nil {
		return nil, fmt.Errorf("tsagent: connect line %q: %w", lines[0], err)
	}
	if err := json.Unmarshal(lines[len(lines)-1], &r.HTTP); err != nil {
		return nil, fmt.Errorf("tsagent: http line %q: %w", lines[len(lines)-1], err)
	}
	for _, l := range lines[1 : len(lines)-1] {
		var o Outcome
		if err := json.Unmarshal(l, &o); err != nil {
			return nil, fmt.Errorf("tsagent: step line %q: %w", l, err)
		}
		r.Steps = append(r.Steps, o)
	}
	return r, nil
}

// agentPath writes agent.mjs beside the SDK's node_modules (Node resolves
// an ES module's imports from its own directory; NODE_PATH is for
// CommonJS only), named by its content so checkouts with different agents
// share the install, and returns its path.
var agentPath = sync.OnceValues(func() (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("tsagent: node is not on PATH: the TypeScript MCP agent needs Node.js 20 or later, and npm to install the SDK (hack/tsagent.sh)")
	}
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(script)
	path := filepath.Join(dir, "agent-"+hex.EncodeToString(sum[:6])+".mjs")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, ".agent-*.mjs")
	if err != nil {
		return "", fmt.Errorf("tsagent: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(script); err != nil {
		tmp.Close()
		return "", fmt.Errorf("tsagent: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("tsagent: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("tsagent: %w", err)
	}
	return path, nil
})

// Dir returns the directory of the SDK's install: TSAGENT_DIR, or what
// hack/tsagent.sh prints (installing it on first use).
func Dir() (string, error) {
	if dir := os.Getenv("TSAGENT_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
			return "", fmt.Errorf("tsagent: TSAGENT_DIR=%s holds no @modelcontextprotocol/sdk (hack/tsagent.sh installs it): %w", dir, err)
		}
		return dir, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "hack", "tsagent.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("tsagent: hack/tsagent.sh: %w:\n%s", err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// moduleRoot is this module's directory, found from the working directory
// up (go test runs a test in its package's directory; with -trimpath the
// runtime knows no source directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("tsagent: %w", err)
	}
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(mod, []byte("module github.com/mcp-catalog/operator\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("tsagent: TSAGENT_DIR is not set and no github.com/mcp-catalog/operator module is above the working directory to run hack/tsagent.sh from")
		}
		dir = parent
	}
}

// Task is a task as the SDK's client saw it.
type Task struct {
	TaskID   string   `json:"taskId"`
	Statuses []string `json:"statuses"`
}
