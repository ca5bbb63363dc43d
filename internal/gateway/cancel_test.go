package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/test/capture"
)

// waitingUpstream is a real go-sdk server with sessions whose echo tool
// says it started, then waits until it is released (answering
// "finished") or its call is cancelled (which it says).
type waitingUpstream struct {
	hs        *httptest.Server
	started   chan struct{}
	cancelled chan struct{}
	release   chan struct{}
}

func startWaitingUpstream(t *testing.T) *waitingUpstream {
	t.Helper()
	u := &waitingUpstream{started: make(chan struct{}, 8), cancelled: make(chan struct{}, 8), release: make(chan struct{})}
	srv := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		u.started <- struct{}{}
		select {
		case <-ctx.Done():
			u.cancelled <- struct{}{}
			return nil, ctx.Err()
		case <-u.release:
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "finished"}}}, nil
		}
	})
	u.hs = httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(func() {
		select {
		case <-u.release:
		default:
			close(u.release)
		}
		u.hs.Close()
	})
	return u
}

// await waits for one signal on c, or fails the test.
func await(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("the upstream's call was not %s", what)
	}
}

const otherToken = "other-agent-token"

// cancellingGateway is a gateway without sessions (the chart's) in front
// of u, which a second agent, of another ServiceAccount, may call too.
func cancellingGateway(t *testing.T, u *waitingUpstream, log *capture.Buffer) *httptest.Server {
	t.Helper()
	_, hs := catalogGatewayWith(t, u.hs.URL, nil, allowList{echoObject: true}, 0, func(o *Options) {
		o.Stateless = true
		o.Audit = audit.NewJSONLines(log)
		o.Authn = tokenTable{
			obsToken:   {Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: obsNS, ServiceAccount: "agent"},
			otherToken: {Username: "system:serviceaccount:team:other", UID: "u2", Namespace: obsNS, ServiceAccount: "other"},
		}
	})
	return hs
}

// postAs sends one message of the initialize era as the agent of token.
func postAs(ctx context.Context, url, token, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+Path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	return http.DefaultClient.Do(req)
}

// callInBackground makes the call with id 7 as the agent and returns
// where its answer's body arrives.
func callInBackground(ctx context.Context, t *testing.T, url, meta string) chan string {
	t.Helper()
	answer := make(chan string, 1)
	go func() {
		resp, err := postAs(ctx, url, obsToken, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+echoLocal+`","arguments":{}`+meta+`}}`)
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- string(b)
	}()
	return answer
}

func cancelAs(t *testing.T, url, token string) {
	t.Helper()
	resp, err := postAs(t.Context(), url, token, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"no longer needed"}}`)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the cancellation was answered %d", resp.StatusCode)
	}
}

// Without sessions kept in the gateway, an agent's notifications/cancelled
// naming its call in flight cancels the upstream's call; the same
// notification from another agent cancels nothing: the call finishes and
// its agent gets the answer. With and without a progress token (the
// gateway's plain call path and the relayed one).
func TestCancellationOfACallInFlight(t *testing.T) {
	for name, meta := range map[string]string{"plain": ``, "with progress": `,"_meta":{"progressToken":"p"}`} {
		t.Run(name, func(t *testing.T) {
			t.Run("by its agent", func(t *testing.T) {
				u := startWaitingUpstream(t)
				log := &capture.Buffer{}
				hs := cancellingGateway(t, u, log)
				answer := callInBackground(t.Context(), t, hs.URL, meta)
				await(t, u.started, "started")
				cancelAs(t, hs.URL, obsToken)
				await(t, u.cancelled, "cancelled")
				<-answer
				lines := auditLines(log)
				if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], `"outcome":"Failed","errorKind":"Cancelled"`) {
					t.Errorf("the cancelled call was audited %v", lines)
				}
			})
			t.Run("by another agent", func(t *testing.T) {
				u := startWaitingUpstream(t)
				hs := cancellingGateway(t, u, &capture.Buffer{})
				answer := callInBackground(t.Context(), t, hs.URL, meta)
				await(t, u.started, "started")
				cancelAs(t, hs.URL, otherToken)
				close(u.release)
				if got := <-answer; !strings.Contains(got, "finished") {
					t.Fatalf("another agent's cancellation ended the call: %s", got)
				}
			})
		})
	}
}

// An agent that closes its call's stream cancels the upstream's call: in
// the initialize era without sessions kept here, in 2026-07-28 (where
// that is how a call is cancelled), and in a session kept here, where the
// go-sdk client also says so with notifications/cancelled.
func TestClosedStreamCancelsTheUpstreamCall(t *testing.T) {
	t.Run("2025-11-25 without sessions", func(t *testing.T) {
		u := startWaitingUpstream(t)
		hs := cancellingGateway(t, u, &capture.Buffer{})
		ctx, cancel := context.WithCancel(t.Context())
		answer := callInBackground(ctx, t, hs.URL, `,"_meta":{"progressToken":"p"}`)
		await(t, u.started, "started")
		cancel()
		await(t, u.cancelled, "cancelled")
		<-answer
	})
	for _, tc := range []struct {
		version   string
		stateless bool
	}{{"2026-07-28", true}, {"2025-11-25", false}} {
		t.Run(tc.version+" go-sdk client", func(t *testing.T) {
			u := startWaitingUpstream(t)
			_, hs := catalogGatewayWith(t, u.hs.URL, nil, allowList{echoObject: true}, 0, func(o *Options) { o.Stateless = tc.stateless })
			cs := agentSession(t, hs.URL, tc.version)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: echoLocal, Arguments: map[string]any{}})
				done <- err
			}()
			await(t, u.started, "started")
			cancel()
			await(t, u.cancelled, "cancelled")
			if err := <-done; err == nil {
				t.Error("the cancelled call answered")
			}
		})
	}
}
