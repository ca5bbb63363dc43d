package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// catalogSize is the number of tools the client benchmark lists: the
// generated catalog plus the server's built-in tools.
const (
	catalogSize = 1000
	pageSize    = 100
)

// lister is one client under test: a whole operation (handshake, work,
// teardown) per call, as the operator runs one per import, probe or call.
type lister interface {
	list(ctx context.Context, url string) (int, error)
	call(ctx context.Context, url string) error
}

func clients() []struct {
	name string
	c    lister
} {
	return []struct {
		name string
		c    lister
	}{
		{"floor", newFloor()},
		{"ours", ours{mcp.New(mcp.Options{AllowPrivateNetworks: true})}},
		{"go-sdk", goSDKClient{}},
		{"mcp-go", mcpGoClient{}},
	}
}

// BenchmarkClient measures a handshake plus a full tools/list of 1,000
// tools (10 pages), and a handshake plus one tools/call, for every client
// against the same stateful go-sdk server (event-stream responses).
func BenchmarkClient(b *testing.B) {
	srv := mcpserver.Start(b, mcpserver.Options{Tools: catalogSize - len(mcpserver.BuiltinTools()), PageSize: pageSize})
	for _, op := range []string{"list", "call"} {
		for _, cl := range clients() {
			b.Run(op+"/"+cl.name, func(b *testing.B) {
				ctx := b.Context()
				run := func() error {
					if op == "call" {
						return cl.c.call(ctx, srv.URL)
					}
					n, err := cl.c.list(ctx, srv.URL)
					if err == nil && n != catalogSize {
						err = fmt.Errorf("listed %d tools, want %d", n, catalogSize)
					}
					return err
				}
				// One operation outside the timer: connection set-up and,
				// for ours, detecting the server's era are paid once per
				// process in the operator, not per operation.
				if err := run(); err != nil {
					b.Fatal(err)
				}
				before := srv.Requests()
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if err := run(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(srv.Requests()-before)/float64(b.N), "http-req/op")
			})
		}
	}
}

// callArgs are the arguments every client sends to the echo tool.
var callArgs = map[string]any{"text": "hello"}

type ours struct{ c *mcp.Client }

func (o ours) list(ctx context.Context, url string) (int, error) {
	cat, err := o.c.ListTools(ctx, mcp.Endpoint{Name: "bench", URL: url})
	if err != nil {
		return 0, err
	}
	return len(cat.Tools), nil
}

func (o ours) call(ctx context.Context, url string) error {
	out, err := o.c.CallTool(ctx, mcp.Endpoint{Name: "bench", URL: url}, mcpserver.ToolEcho, callArgs)
	if err == nil && out.Text != "hello" {
		err = fmt.Errorf("echo answered %q", out.Text)
	}
	return err
}

// goSDKClient is the official SDK's client. The standalone event stream is
// disabled because none of the other clients opens one: with it, the SDK
// would pay for an extra GET per operation that the others do not make.
type goSDKClient struct{}

func (goSDKClient) session(ctx context.Context, url string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
}

func (g goSDKClient) list(ctx context.Context, url string) (int, error) {
	s, err := g.session(ctx, url)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	n := 0
	for _, err := range s.Tools(ctx, nil) {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

func (g goSDKClient) call(ctx context.Context, url string) error {
	s, err := g.session(ctx, url)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: mcpserver.ToolEcho, Arguments: callArgs})
	if err != nil {
		return err
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); !ok || tc.Text != "hello" {
		return errors.New("echo answered something else")
	}
	return nil
}

type mcpGoClient struct{}

func (mcpGoClient) start(ctx context.Context, url string) (*mcpgoclient.Client, error) {
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		return nil, err
	}
	// mcp-go gives up when a server answers its 2026-07-28 probe with a
	// version list holding only legacy versions (the go-sdk stateful
	// server's answer), so it is pinned to the legacy handshake, which is
	// what it ends up speaking with this server anyway.
	c := mcpgoclient.NewClient(tr, mcpgoclient.WithLegacyProtocolOnly()) //nolint:staticcheck // deliberately the legacy handshake, as said above
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (m mcpGoClient) list(ctx context.Context, url string) (int, error) {
	c, err := m.start(ctx, url)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	res, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		return 0, err
	}
	return len(res.Tools), nil
}

func (m mcpGoClient) call(ctx context.Context, url string) error {
	c, err := m.start(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = mcpserver.ToolEcho
	req.Params.Arguments = callArgs
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if tc, ok := res.Content[0].(mcpgo.TextContent); !ok || tc.Text != "hello" {
		return errors.New("echo answered something else")
	}
	return nil
}

// floor is the least a client can do and still make the exchanges ours
// makes with a known legacy server: initialize, notifications/initialized,
// the work (10 tools/list pages, or one tools/call), DELETE of the session.
// It validates nothing: no id check, no duplicate-member check, no schema
// normalisation, no body cap. It decodes into plain structs with one
// json.Unmarshal per message.
type floor struct{ hc *http.Client }

func newFloor() *floor { return &floor{hc: &http.Client{}} }

type floorTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations *struct {
		Title        string `json:"title"`
		ReadOnlyHint *bool  `json:"readOnlyHint"`
	} `json:"annotations"`
}

type floorResult struct {
	Tools      []floorTool `json:"tools"`
	NextCursor string      `json:"nextCursor"`
	Content    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

type floorSession struct {
	f       *floor
	url     string
	id      int
	session string
}

// post sends one JSON-RPC message and decodes the answer, if any, from
// either a JSON body or the first data line of an event stream.
func (s *floorSession) post(ctx context.Context, method string, params any, notify bool, out any) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	if !notify {
		s.id++
		msg["id"] = s.id
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
	}
	resp, err := s.f.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: status %d", method, resp.StatusCode)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.session = id
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	var payload []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && len(d) > 0 {
				payload = d
				break
			}
		}
	} else if payload, err = io.ReadAll(resp.Body); err != nil {
		return err
	}
	env := struct {
		Result any `json:"result"`
	}{out}
	return json.Unmarshal(payload, &env)
}

func (f *floor) open(ctx context.Context, url string) (*floorSession, error) {
	s := &floorSession{f: f, url: url}
	var init map[string]any
	err := s.post(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]string{"name": "floor", "version": "1"},
	}, false, &init)
	if err != nil {
		return nil, err
	}
	return s, s.post(ctx, "notifications/initialized", nil, true, nil)
}

func (s *floorSession) close(ctx context.Context) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil)
	req.Header.Set("Mcp-Session-Id", s.session)
	if resp, err := s.f.hc.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func (f *floor) list(ctx context.Context, url string) (int, error) {
	s, err := f.open(ctx, url)
	if err != nil {
		return 0, err
	}
	defer s.close(ctx)
	var tools []floorTool
	cursor := ""
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page floorResult
		if err := s.post(ctx, "tools/list", params, false, &page); err != nil {
			return 0, err
		}
		tools = append(tools, page.Tools...)
		if page.NextCursor == "" {
			return len(tools), nil
		}
		cursor = page.NextCursor
	}
}

func (f *floor) call(ctx context.Context, url string) error {
	s, err := f.open(ctx, url)
	if err != nil {
		return err
	}
	defer s.close(ctx)
	var res floorResult
	if err := s.post(ctx, "tools/call", map[string]any{"name": mcpserver.ToolEcho, "arguments": callArgs}, false, &res); err != nil {
		return err
	}
	if len(res.Content) == 0 || res.Content[0].Text != "hello" {
		return errors.New("echo answered something else")
	}
	return nil
}
