package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// The official TypeScript SDK's client (2025-11-25, the revision most
// agents speak) through the gateway as the chart runs it (no sessions kept
// here): it initializes, lists, calls, pings and is refused a tool it may
// not call, and every request it sends is answered by the gateway's own
// code, none by a server built for it.
func TestTypeScriptClientThroughTheStatelessGateway(t *testing.T) {
	up := callUpstream(t)
	tools, allow := bigCatalog(t, 20, 8<<10)
	g, hs := catalogGatewayWith(t, up.URL, nil, allow, 0, func(o *Options) { o.Stateless = true }, tools...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before := g.eraAnswers.Load()
	res, err := tsagent.Run(ctx, hs.URL+Path, obsToken,
		tsagent.List(), tsagent.Call(echoLocal, map[string]any{"text": "from typescript"}), tsagent.Ping(),
		tsagent.Call(toolname.LocalName("docs", "secret"), map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Connect.Error != nil || res.Connect.ProtocolVersion != "2025-11-25" || res.Connect.SessionID {
		t.Fatalf("connect: %+v; want 2025-11-25 without a session", res.Connect)
	}
	list, call, ping, refused := res.Steps[0], res.Steps[1], res.Steps[2], res.Steps[3]
	if list.Error != nil || len(list.Tools) != 21 {
		t.Errorf("list: %v, %d tools; want the echo tool and 20 more", list.Error, len(list.Tools))
	}
	if call.Error != nil || call.IsError || call.Text() != "from typescript" {
		t.Errorf("call: %+v; want the argument echoed", call)
	}
	if ping.Error != nil {
		t.Errorf("ping: %v", ping.Error)
	}
	if refused.Error != nil || !refused.IsError || refused.Text() == "" {
		t.Errorf("a tool RBAC does not allow: %+v; want a refusal", refused)
	}
	var posts int
	for _, r := range res.HTTP.Requests {
		if r.Method == "POST" {
			posts++
		}
	}
	if got := int(g.eraAnswers.Load() - before); got != posts || posts < 6 {
		t.Errorf("%d of the client's %d POSTs answered by the gateway's own code, want all (at least 6)", got, posts)
	}
}

// The official TypeScript SDK's client, through the gateway as the chart
// runs it (no sessions kept here), is asked its server's form on the
// answer to its call and answers it in a POST of its own, which the
// gateway hands to the call waiting: the server's result reports the
// answer.
func TestTypeScriptClientAskedWithoutASession(t *testing.T) {
	up := askingUpstream(t)
	_, hs := catalogGatewayWith(t, up.URL, nil, allowList{echoObject: true}, 0, func(o *Options) { o.Stateless = true })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := tsagent.Start(ctx, hs.URL+Path, obsToken, tsagent.Options{Elicit: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada Lovelace"}}},
		tsagent.Call(echoLocal, map[string]any{"ask": "form"}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Connect.Error != nil || res.Connect.SessionID {
		t.Fatalf("connect: %+v; want no session", res.Connect)
	}
	call := res.Steps[0]
	if call.Error != nil || call.IsError || call.Text() != "accept map[name:Ada Lovelace]" || len(call.Elicitations) != 1 {
		t.Errorf("call: %+v (text %q); want the form asked once and the server's result for the answer", call, call.Text())
	}
}
