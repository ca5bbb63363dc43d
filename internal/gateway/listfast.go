package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/logging"
)

// A tools/list of the 2026-07-28 revision is answered here, from the bytes
// each visible tool is served as, kept per version of the tool (listCache):
// the SDK would build a server for the request, parse every schema again
// to add its tool, and encode the whole list twice into growing buffers,
// which allocated about twelve times the bytes it served
// (docs/adr/035-gateway-list-cost.md). Only a request of the one plain
// shape this path answers takes it; anything else (a cursor, other _meta,
// a host the SDK's rebinding check refuses, a list longer than the SDK's
// page) is served by the SDK as before. TestFastListMatchesTheSDK proves
// the two answer the same bytes.

// listSuffix ends a tools/list answer; listPrefix (built by New) frames
// its tools as the SDK frames them for this revision: a complete result,
// the server's name in _meta, and the cache fields every list result
// carries (setCacheable).
const listSuffix = `]}}`

func (g *Gateway) buildListPrefix() []byte {
	var c sdk.Cacheable
	g.setCacheable(context.Background(), &sdk.ListToolsRequest{}, &c)
	if c.CacheScope == "" {
		c.CacheScope = "public"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(g.implementation())
	impl := strings.TrimRight(buf.String(), "\n")
	buf.Reset()
	_ = enc.Encode(c.CacheScope)
	scope := strings.TrimRight(buf.String(), "\n")
	return []byte(`,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":` + impl +
		`},"ttlMs":` + strconv.Itoa(c.TTLMs) + `,"cacheScope":` + scope + `,"tools":[`)
}

// buildEraListPrefix frames the tools of a tools/list answer of the
// initialize era as the SDK frames them: the cache fields every list
// result carries, then the tools.
func (g *Gateway) buildEraListPrefix() []byte {
	var c sdk.Cacheable
	g.setCacheable(context.Background(), &sdk.ListToolsRequest{}, &c)
	scope, _ := json.Marshal(c.CacheScope)
	return []byte(`,"result":{"ttlMs":` + strconv.Itoa(c.TTLMs) + `,"cacheScope":` + string(scope) + `,"tools":[`)
}

// simpleID reports whether id is a JSON-RPC id the SDK writes back byte
// for byte: an integer it holds exactly (0, or up to 15 digits not
// starting with 0, optionally negative), or a string of up to 128
// characters of printable ASCII without escapes.
func simpleID(id []byte) bool {
	if len(id) >= 2 && id[0] == '"' {
		return id[len(id)-1] == '"' && len(id)-2 <= 128 && plainASCII(id[1:len(id)-1])
	}
	if len(id) == 1 && id[0] == '0' {
		return true
	}
	digits := id
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || digits[0] < '1' || digits[0] > '9' {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainASCII reports whether b is printable ASCII without a quote or a
// backslash: the contents of a JSON string that has no escapes.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// plainString reads a JSON string of printable ASCII without escapes
// without the decoder; ok is false for any other text, which the decoder
// reads.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || !plainASCII(raw[1:len(raw)-1]) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// listRequest is the one shape of request the fast path answers.
type listRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *struct {
		Meta *struct {
			ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
			ClientInfo      *struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"io.modelcontextprotocol/clientInfo"`
			ClientCapabilities map[string]json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

// serveList answers r, a tools/list of the 2026-07-28 revision, and
// reports whether it did; when it did not, the SDK serves it.
func (g *Gateway) serveList(w http.ResponseWriter, r *http.Request, m *message, id *authn.Identity) bool {
	if g.noFastList.Load() || m.era != modernProtocol || r.Header.Get("Mcp-Method") != "tools/list" || r.Header.Get("Mcp-Name") != "" {
		return false
	}
	reqID, ok := plainListRequest(m.body)
	if !ok {
		return false
	}
	if !g.writeList(w, r, id, reqID, g.listPrefix, false) {
		return false
	}
	g.fastLists.Add(1)
	return true
}

// serveEraList answers a tools/list of the initialize era without a
// cursor, and reports whether it did.
func (g *Gateway) serveEraList(w http.ResponseWriter, r *http.Request, m *message, id *authn.Identity) bool {
	if !g.writeList(w, r, id, m.id, g.eraListPrefix, m.era == tasksProtocol) {
		return false
	}
	g.eraAnswers.Add(1)
	return true
}

// writeList writes the caller's list, answering the request reqID with
// the tools framed by prefix and listSuffix, from the bytes the list
// cache keeps for each tool; it reports false, having written nothing,
// when the tools could not be decided or fill more than one page. With
// tasks (the revision that has them), a tool that takes tasks is listed
// with its execution member (taskdeclare.go).
func (g *Gateway) writeList(w http.ResponseWriter, r *http.Request, id *authn.Identity, reqID json.RawMessage, prefix []byte, tasks bool) bool {
	tools, err := g.visibleTools(r.Context(), id)
	if err != nil || len(tools) > sdk.DefaultPageSize {
		// The SDK's path logs the error and answers as it always has.
		return false
	}
	log := logging.FromContext(r.Context(), logging.Gateway)
	// The encoded tools in the order the SDK lists them (by name); of
	// tools sharing a name, the last one that can be served, as adding it
	// to a server replaces the one before.
	parts := make([][]byte, 0, len(tools))
	names := make([]string, 0, len(tools))
	for _, o := range tools {
		t, name := o.tool, o.localName()
		enc, err := g.lists.get(t, name, g.encodeTool)
		if err != nil {
			log.Error(err, "a tool cannot be offered", "tool", types.NamespacedName{Namespace: t.Namespace, Name: t.Name}.String())
			continue
		}
		if s := o.listedTaskSupport(); tasks && taskSupportShown(s) {
			enc = withExecution(enc, s)
		}
		if n := len(names); n > 0 && names[n-1] == name {
			parts[n-1] = enc
			continue
		}
		parts, names = append(parts, enc), append(names, name)
	}
	size := len(`{"jsonrpc":"2.0","id":`) + len(reqID) + len(prefix) + len(listSuffix)
	for i, p := range parts {
		if i > 0 {
			size++
		}
		size += len(p)
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`)
	_, _ = w.Write(reqID)
	_, _ = w.Write(prefix)
	for i, p := range parts {
		if i > 0 {
			_, _ = io.WriteString(w, ",")
		}
		_, _ = w.Write(p)
	}
	_, _ = io.WriteString(w, listSuffix)
	g.budgets.Charge(id, size)
	return true
}

type readCloser struct {
	io.Reader
	io.Closer
}

// plainListRequest returns the id of body when it is a tools/list request
// of the plain shape: JSON-RPC 2.0, a simple id, and params holding only
// the revision's _meta (its version, the client's name and version, and
// its capabilities), with nothing else anywhere.
func plainListRequest(body []byte) (json.RawMessage, bool) {
	return plainMetaRequest(body, "tools/list")
}

// plainMetaRequest returns the id of body when it is a request of method
// of that plain shape.
func plainMetaRequest(body []byte, method string) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req listRequest
	if dec.Decode(&req) != nil || len(bytes.TrimSpace(body[dec.InputOffset():])) != 0 {
		return nil, false
	}
	if req.JSONRPC != "2.0" || req.Method != method || !simpleID(req.ID) ||
		req.Params == nil || req.Params.Meta == nil || req.Params.Meta.ProtocolVersion != modernProtocol ||
		req.Params.Meta.ClientInfo == nil || req.Params.Meta.ClientInfo.Name == "" || req.Params.Meta.ClientCapabilities == nil {
		return nil, false
	}
	return req.ID, true
}

// jsonContent reports whether a Content-Type is application/json.
func jsonContent(v string) bool {
	t, _, err := mime.ParseMediaType(v)
	return err == nil && t == "application/json"
}

// acceptsBoth reports whether an Accept header plainly names both
// application/json and text/event-stream, as the SDK requires.
func acceptsBoth(values []string) bool {
	var j, s bool
	for _, v := range values {
		for _, raw := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json":
				j = true
			case "text/event-stream":
				s = true
			}
		}
	}
	return j && s
}

// hostAccepted reports whether the SDK's DNS-rebinding guard would let r
// through: it refuses a request that came in on a loopback address with a
// Host that is not one. Where in doubt, the SDK decides.
func hostAccepted(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	if tcp, ok := local.(*net.TCPAddr); ok {
		// The common case, without formatting the address to parse it.
		return !tcp.IP.IsLoopback() || loopback(r.Host)
	}
	return !loopback(local.String()) || loopback(r.Host)
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// encodeTool is t as a tools/list answer holds it under name (its own
// local name, or the one a consuming namespace's McpSharedServer gives
// it): the definition the SDK would serve (sdkTool), checked as the SDK
// checks a tool it is given, and encoded as it encodes it.
func (g *Gateway) encodeTool(t *mcpv1alpha1.McpTool, name string) ([]byte, error) {
	v, err := g.views.Get(t)
	if err != nil {
		return nil, err
	}
	tool := sdkTool(name, v)
	if err := addTool(checkServer(), tool, nil); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tool); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// checkServer is a server that tools are added to only to be checked.
func checkServer() *sdk.Server {
	return sdk.NewServer(&sdk.Implementation{Name: "check"}, nil)
}

// listCache keeps, per McpTool and name it is listed under, the bytes one
// version of it is listed as (or why it cannot be), so that a list of
// unchanged tools encodes nothing. It holds at most maxBytes of them: when a new entry would pass
// that, entries are dropped until a quarter is free again. A tool's older
// version is replaced by its newer one.
type listCache struct {
	mu       sync.Mutex
	m        map[listKey]listEntry
	bytes    int
	maxBytes int
}

// listKey is a tool and the name it is listed under: a shared tool is
// listed under a name of each consuming namespace's.
type listKey struct {
	tool types.NamespacedName
	name string
}

type listEntry struct {
	version string
	enc     []byte
	err     error
}

// DefaultListCacheBytes bounds the encoded tools a gateway keeps.
const DefaultListCacheBytes = 32 << 20

// get returns the bytes of t's version, encoding them with encode the
// first time that version is asked for.
func (c *listCache) get(t *mcpv1alpha1.McpTool, name string, encode func(*mcpv1alpha1.McpTool, string) ([]byte, error)) ([]byte, error) {
	key := listKey{tool: types.NamespacedName{Namespace: t.Namespace, Name: t.Name}, name: name}
	version := string(t.UID) + "/" + t.ResourceVersion
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && e.version == version {
		return e.enc, e.err
	}
	enc, err := encode(t, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[listKey]listEntry)
	}
	if old, ok := c.m[key]; ok {
		c.bytes -= len(old.enc)
		delete(c.m, key)
	}
	if len(enc) > c.maxBytes {
		// Never kept: encoded again on every list.
		return enc, err
	}
	if c.bytes+len(enc) > c.maxBytes {
		for k, old := range c.m {
			c.bytes -= len(old.enc)
			delete(c.m, k)
			if c.bytes+len(enc) <= c.maxBytes*3/4 {
				break
			}
		}
	}
	c.m[key] = listEntry{version: version, enc: enc, err: err}
	c.bytes += len(enc)
	return enc, err
}
