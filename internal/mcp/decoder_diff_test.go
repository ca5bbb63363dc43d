package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-catalog/operator/test/mcpserver"
)

// The differential tests hold the tape decoder to the decoder it replaced
// (legacy_decoder_test.go): for every input, the same acceptance, the same
// rule or skip reason for a refusal, and byte-identical normalised schemas,
// so that no definition hash an approval names changes.

const diffID = "mcpc-diff-1"

// checkSchemaMatchesLegacy compares NormalizeSchema with the old normaliser.
func checkSchemaMatchesLegacy(t *testing.T, in []byte) {
	t.Helper()
	got, gerr := NormalizeSchema(in)
	want, werr := legacyNormalizeSchema(in)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q:\nnormalised to %s (%v)\nthe old normaliser: %s (%v)", in, got, gerr, want, werr)
	}
	if gerr != nil {
		var g, w *SchemaError
		if !errors.As(gerr, &g) || !errors.As(werr, &w) || g.Rule != w.Rule {
			t.Fatalf("%q: rejected with %v, the old normaliser with %v", in, gerr, werr)
		}
		return
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%q:\nnormalised to      %s\nthe old normaliser %s", in, got, want)
	}
}

// pageOutcome is everything reading one tools/list message decides.
type pageOutcome struct {
	Err     string
	Kind    messageKind
	RPCErr  *rpcError
	Next    string
	More    bool
	Entries []catalogEntry
	Tools   []Tool
	Skipped []SkippedTool
}

func describe(err error) string {
	var pe *protocolError
	var e *Error
	switch {
	case errors.As(err, &pe):
		return fmt.Sprintf("%s: %s", pe.kind, pe.detail)
	case errors.As(err, &e):
		return fmt.Sprintf("%s: %s (limit %d)", e.Kind, e.Detail, e.Limit)
	}
	return "untyped: " + err.Error()
}

// pageLimits are the ceilings a page is read under.
type pageLimits struct {
	modern                    bool
	maxTools                  int
	maxCatalog, maxDefinition int64
}

func diffOperation(l pageLimits) *operation {
	o := &operation{ep: Endpoint{Name: "diff", MaxTools: l.maxTools}, era: eraLegacy}
	if o.ep.MaxTools <= 0 {
		o.ep.MaxTools = DefaultMaxTools
	}
	if l.modern {
		o.era = eraModern
	}
	return o
}

// readWithTape reads a message as the client now does. The input is
// overwritten afterwards, so an outcome that still referred to it (instead
// of holding copies) would show up as a difference.
func readWithTape(body []byte, l pageLimits) pageOutcome {
	body = bytes.Clone(body)
	defer func() {
		for i := range body {
			body[i] = 'x'
		}
	}()
	var out pageOutcome
	msg, err := parseMessage(body, diffID)
	if err != nil {
		out.Err = describe(err)
		return out
	}
	out.Kind, out.RPCErr = msg.kind, msg.err
	if msg.kind != kindResponse || msg.err != nil {
		return out
	}
	defer msg.release()
	o := diffOperation(l)
	if l.modern {
		if err := o.checkResultType("tools/list", msg.tape, msg.resultAt); err != nil {
			out.Err = describe(err)
			return out
		}
	}
	b := newCatalogBuilder(l.maxCatalog, l.maxDefinition)
	out.Next, out.More, err = o.readPage(msg, b)
	if err != nil {
		out.Err = describe(err)
	}
	out.Entries = b.entries
	out.Tools, out.Skipped = b.finish()
	return out
}

// readWithLegacy reads a message as the client used to.
func readWithLegacy(body []byte, l pageLimits) pageOutcome {
	var out pageOutcome
	msg, err := legacyParseMessage(body, diffID)
	if err != nil {
		out.Err = describe(err)
		return out
	}
	out.Kind, out.RPCErr = msg.kind, msg.err
	if msg.kind != kindResponse || msg.err != nil {
		return out
	}
	o := diffOperation(l)
	if l.modern {
		if err := o.legacyCheckResultType("tools/list", msg.result); err != nil {
			out.Err = describe(err)
			return out
		}
	}
	b := &legacyBuilder{*newCatalogBuilder(l.maxCatalog, l.maxDefinition)}
	out.Next, out.More, err = o.legacyReadPage(msg.result, b)
	if err != nil {
		out.Err = describe(err)
	}
	out.Entries = b.entries
	out.Tools, out.Skipped = b.finish()
	return out
}

func checkPageMatchesLegacy(t *testing.T, body []byte, l pageLimits) {
	t.Helper()
	got := readWithTape(body, l)
	want := readWithLegacy(body, l)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.300q (%+v):\nread as        %s\nthe old reader %s", body, l, dump(got), dump(want))
	}
}

func dump(p pageOutcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "err=%q kind=%d rpc=%+v next=%q more=%v\n", p.Err, p.Kind, p.RPCErr, p.Next, p.More)
	for _, e := range p.Entries {
		fmt.Fprintf(&b, "  %q %q schema=%s out=%s title=%q desc=%.40q ann=%s\n", e.name, e.reason, e.tool.InputSchema, e.tool.OutputSchema, e.tool.Title, e.tool.Description, annotationsString(e.tool.Annotations))
	}
	return b.String()
}

func annotationsString(a *ToolAnnotations) string {
	if a == nil {
		return "nil"
	}
	f := func(b *bool) string {
		if b == nil {
			return "-"
		}
		return fmt.Sprint(*b)
	}
	return fmt.Sprintf("{%q %s %s %s %s}", a.Title, f(a.ReadOnlyHint), f(a.DestructiveHint), f(a.IdempotentHint), f(a.OpenWorldHint))
}

// checkTapeMatchesScanner holds the tape's grammar (which jsonScanner runs
// too) to encoding/json's, and its members to decodeObject's.
func checkTapeMatchesScanner(t *testing.T, in []byte) {
	t.Helper()
	want := json.Valid(in)
	tp, ok := parseTape(in)
	if ok != want {
		t.Fatalf("%q: tape accepts %v, encoding/json %v", in, ok, want)
	}
	if !ok {
		return
	}
	defer tp.release()
	if !bytes.Equal(tp.raw(0), bytes.TrimSpace(in)) {
		t.Fatalf("%q: tape spans %q", in, tp.raw(0))
	}
	if tp.e[0].kind != kObject {
		return
	}
	m, err := decodeObject(in)
	if tp.hasDuplicate(0) != errors.Is(err, errDuplicateMember) {
		t.Fatalf("%q: tape sees a duplicate %v, decodeObject says %v", in, tp.hasDuplicate(0), err)
	}
	if err != nil {
		return
	}
	n := 0
	for k, end := 1, tp.next(0); k < end; k = tp.next(k + 1) {
		key, ok := tp.text(k)
		if !ok || !bytes.Equal(tp.raw(k+1), m[key]) {
			t.Fatalf("%q: member %q is %q on the tape, %q for decodeObject", in, key, tp.raw(k+1), m[key])
		}
		n++
	}
	if n != len(m) {
		t.Fatalf("%q: %d members on the tape, %d for decodeObject", in, n, len(m))
	}
}

func TestTapeMatchesScanner(t *testing.T) {
	for _, s := range scanSeeds {
		checkTapeMatchesScanner(t, []byte(s))
	}
	for _, s := range schemaSeeds {
		checkTapeMatchesScanner(t, []byte(s))
	}
}

func FuzzTapeMatchesScanner(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkTapeMatchesScanner)
}

func FuzzNormalizeSchemaMatchesLegacy(f *testing.F) {
	for _, s := range schemaSeeds {
		f.Add([]byte(s))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		f.Add([]byte(genSchema(r, 1)))
	}
	f.Fuzz(checkSchemaMatchesLegacy)
}

func FuzzToolsPageMatchesLegacy(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(strings.ReplaceAll(s, "mcpc-fuzz-1", diffID)), false, uint8(0))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 30 {
		f.Add([]byte(genPage(r)), i%2 == 0, uint8(i%7))
	}
	f.Fuzz(func(t *testing.T, body []byte, modern bool, limit uint8) {
		l := pageLimits{modern: modern}
		if limit > 0 {
			// Small ceilings, so that the fuzzer reaches them.
			l.maxTools, l.maxCatalog, l.maxDefinition = int(limit), int64(limit)*64, int64(limit)*32
		}
		checkPageMatchesLegacy(t, body, l)
	})
}

// TestGeneratedCatalogsMatchLegacy runs generated pages, and damaged copies
// of them, through both readers under several ceilings.
func TestGeneratedCatalogsMatchLegacy(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	limits := []pageLimits{{}, {modern: true}, {maxTools: 5}, {maxCatalog: 2000, maxDefinition: 300}}
	for i := range 300 {
		page := genPage(r)
		checkPageMatchesLegacy(t, []byte(page), limits[i%len(limits)])
		damaged := []byte(page)
		switch p := r.IntN(len(damaged)); i % 3 {
		case 0:
			damaged = damaged[:p]
		case 1:
			const bytesToPlant = "{}[]\",:\\ 0n\x00\xff"
			damaged[p] = bytesToPlant[r.IntN(len(bytesToPlant))]
		default:
			q := min(len(damaged), p+r.IntN(40))
			damaged = append(damaged[:q:q], damaged[p:]...)
		}
		checkPageMatchesLegacy(t, damaged, limits[i%len(limits)])
	}
	for range 2000 {
		checkSchemaMatchesLegacy(t, []byte(genSchema(r, 1)))
	}
}

// TestServerCatalogsMatchLegacy records the tools/list pages real servers
// send (the official go-sdk and mcp-go servers with the generated catalog,
// and the amplifying server whose schemas nest beyond the depth limit) and
// reads each through both readers.
func TestServerCatalogsMatchLegacy(t *testing.T) {
	servers := map[string]string{
		"go-sdk": mcpserver.Start(t, mcpserver.Options{Tools: 150, PageSize: 40}).URL,
		"mcp-go": mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.MCPGo, Tools: 150, PageSize: 40}).URL,
		"deep":   mcpserver.StartHostile(t, mcpserver.HostileOptions{Pages: 2, PageBytes: 256 << 10, ToolBytes: 16 << 10, Depth: MaxSchemaDepth + 2}).URL,
		"wide":   mcpserver.StartHostile(t, mcpserver.HostileOptions{Pages: 2, PageBytes: 512 << 10, ToolBytes: 32 << 10, Depth: 6}).URL,
	}
	for name, url := range servers {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{rt: http.DefaultTransport}
			c := New(Options{HTTPClient: &http.Client{Transport: rec}, AllowPrivateNetworks: true})
			if _, err := c.ListTools(t.Context(), Endpoint{Name: name, URL: url}); err != nil {
				t.Fatal(err)
			}
			pages := rec.messages(t)
			if len(pages) < 2 {
				t.Fatalf("recorded %d pages", len(pages))
			}
			for _, p := range pages {
				checkPageMatchesLegacy(t, p.body, pageLimits{})
				checkPageMatchesLegacy(t, p.body, pageLimits{maxCatalog: 64 << 10})
			}
		})
	}
}

// recorder keeps the bodies of tools/list responses as the client read them.
type recorder struct {
	rt    http.RoundTripper
	mu    sync.Mutex
	pages []recorded
}

type recorded struct {
	id          string
	contentType string
	raw         *bytes.Buffer
	body        []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var msg struct {
		ID     string `json:"id"`
		Method string `json:"method"`
	}
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(b, &msg)
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := r.rt.RoundTrip(req)
	if err != nil || msg.Method != "tools/list" {
		return resp, err
	}
	buf := &bytes.Buffer{}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, buf), resp.Body}
	r.mu.Lock()
	r.pages = append(r.pages, recorded{id: msg.ID, contentType: resp.Header.Get("Content-Type"), raw: buf})
	r.mu.Unlock()
	return resp, nil
}

// messages returns the recorded JSON-RPC messages, with our request id
// replaced by diffID.
func (r *recorder) messages(t *testing.T) []recorded {
	t.Helper()
	var out []recorded
	for _, p := range r.pages {
		raw := p.raw.Bytes()
		if strings.HasPrefix(p.contentType, "text/event-stream") {
			evs, err := decodeAll(t, bytes.NewReader(raw))
			if err != nil || len(evs) == 0 {
				t.Fatalf("event stream: %v", err)
			}
			raw = evs[len(evs)-1].Data
		}
		p.body = bytes.Replace(raw, []byte(`"`+p.id+`"`), []byte(`"`+diffID+`"`), 1)
		out = append(out, p)
	}
	return out
}

// genSchema writes a random schema: mostly the shapes servers send, with
// every rule of the normaliser broken now and then, member names escaped,
// text outside ASCII (and outside UTF-8), repeated members and odd spacing.
func genSchema(r *rand.Rand, depth int) string {
	var b strings.Builder
	genNode(r, &b, depth, depth == 1)
	return b.String()
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// choose picks from bad one time in ten, else from good.
func choose(r *rand.Rand, good, bad []string) string {
	if r.IntN(10) == 0 {
		return pick(r, bad...)
	}
	return pick(r, good...)
}

func ws(r *rand.Rand) string {
	if r.IntN(6) == 0 {
		return pick(r, " ", "\n\t", "  ", "\r\n")
	}
	return ""
}

func genString(r *rand.Rand) string {
	return pick(r,
		`"plain text"`, `"Line\nbreak \"quoted\" \\ back"`, `"caf\u00e9 \u2028 \ud83d\ude00"`, "\"na\xc3\xafve \xff\xfe\"",
		`"<b>&amp;</b>"`, `"\u0000\u001f\t"`, `""`, `"x"`, "\"\x7f\"", `"\ud800"`,
	)
}

func genNode(r *rand.Rand, b *strings.Builder, depth int, root bool) {
	if !root {
		switch r.IntN(40) {
		case 0:
			b.WriteString(pick(r, "true", "false"))
			return
		case 1:
			b.WriteString(pick(r, "null", `"s"`, "[]", "7"))
			return
		}
	}
	type member struct{ k, v string }
	var ms []member
	add := func(k, v string) { ms = append(ms, member{k, v}) }
	switch {
	case root && r.IntN(30) != 0:
		add(`"type"`, `"object"`)
	case r.IntN(4) != 0:
		add(pick(r, `"type"`, `"type"`, `"typ\u0065"`), choose(r,
			[]string{`"string"`, `"integer"`, `"boolean"`, `"number"`, `"object"`, `"array"`, `"null"`, `["string","null"]`, `"str\u0069ng"`},
			[]string{`["string","string"]`, `[]`, `"date"`, `null`, `7`, `["integer",null]`}))
	}
	if r.IntN(2) == 0 {
		add(`"description"`, choose(r, []string{genString(r), "null"}, []string{"5", `["x"]`}))
	}
	if r.IntN(3) == 0 || (root && r.IntN(3) != 0) {
		if depth < MaxSchemaDepth+1 && r.IntN(25) != 0 {
			var p strings.Builder
			p.WriteString("{" + ws(r))
			n := r.IntN(5)
			for i := range n {
				if i > 0 {
					p.WriteString("," + ws(r))
				}
				p.WriteString(choose(r,
					[]string{fmt.Sprintf(`"p%d"`, i), fmt.Sprintf(`"Q.%d"`, i), fmt.Sprintf(`"\u0061b_%d"`, i), fmt.Sprintf(`"a.b-c_%d"`, i)},
					[]string{`"query"`, `"first name"`, `""`, `"é"`}))
				p.WriteString(ws(r) + ":" + ws(r))
				var c strings.Builder
				genNode(r, &c, depth+1, false)
				p.WriteString(c.String())
			}
			p.WriteString(ws(r) + "}")
			add(`"properties"`, p.String())
		} else {
			add(`"properties"`, pick(r, "[]", "null", `{"a":{},"a":{}}`))
		}
	}
	if r.IntN(4) == 0 {
		add(`"required"`, choose(r, []string{`["query"]`, `["a","b"]`, `[]`, `["\u0061"]`, `["p0", "p1"]`},
			[]string{`["a","a"]`, `["a","\u0061"]`, `null`, `"a"`, `[null]`, `["a b"]`, `[1]`}))
	}
	if r.IntN(6) == 0 {
		if r.IntN(10) == 0 {
			add(`"items"`, `[{"type":"string"}]`)
		} else {
			var c strings.Builder
			genNode(r, &c, depth+1, false)
			add(`"items"`, c.String())
		}
	}
	if r.IntN(6) == 0 {
		add(`"enum"`, choose(r, []string{`["open","closed"]`, `[ 1.50 , "a" , null , {"k" : [ true ] , "k" : 1} ]`, `["\u00e9", "x y"]`, "[-0.0e+1]"},
			[]string{`[]`, `null`, `"a"`, `[` + strings.Repeat(`1,`, MaxEnumValues) + `1]`}))
	}
	if r.IntN(20) == 0 {
		add(pick(r, `"x-mcp-header"`, `"x-mcp-h\u0065ader"`), pick(r, `"Region"`, `"region"`, `"Bad Name"`, `""`, `null`, `5`, `"X-Tenant"`))
	}
	if r.IntN(30) == 0 {
		add(pick(r, `"$ref"`, `"anyOf"`, `"not"`, `"prefixItems"`, `"$dynamicRef"`, `"\u0024ref"`), `{}`)
	}
	if r.IntN(8) == 0 {
		add(`"$schema"`, choose(r, []string{`"http://json-schema.org/draft-07/schema#"`, `"https://json-schema.org/draft/2020-12/schema"`, `"https:\/\/json-schema.org/draft-04/schema"`},
			[]string{`"https://example.test/x"`, `null`, `1`}))
	}
	if r.IntN(5) == 0 {
		add(pick(r, `"additionalProperties"`, `"$defs"`, `"patternProperties"`), choose(r,
			[]string{"false", `{"type":"string"}`, `{"q":"\\"}`, `{"a":{"x-mcp-header":1},"a":2}`},
			[]string{`{"a":{"x-mcp-header":"A"}}`, `{"a":{"x-mcp-h\u0065ader":"A"}}`, `[{"x-mcp-header":1}]`, `{"x-mcp-header":1,"x-mcp-header":2}`}))
	}
	if r.IntN(3) == 0 {
		add(pick(r, `"title"`, `"default"`, `"minLength"`, `"format"`, `"x-vendor"`, `"examples"`), pick(r, `"T"`, `0`, `{"a":[1,{"b":null}]}`, `[1, 2]`, `{"a":1,"a":2}`))
	}
	if r.IntN(25) == 0 && len(ms) > 0 {
		ms = append(ms, ms[r.IntN(len(ms))])
	}
	r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	b.WriteString("{" + ws(r))
	for i, m := range ms {
		if i > 0 {
			b.WriteString("," + ws(r))
		}
		b.WriteString(m.k + ws(r) + ":" + ws(r) + m.v)
	}
	b.WriteString(ws(r) + "}")
}

// genTool writes a random definition around a random schema.
func genTool(r *rand.Rand, i int) string {
	type member struct{ k, v string }
	var ms []member
	add := func(k, v string) { ms = append(ms, member{k, v}) }
	if r.IntN(20) != 0 {
		add(pick(r, `"name"`, `"name"`, `"n\u0061me"`), choose(r,
			[]string{fmt.Sprintf(`"tool_%d"`, i), fmt.Sprintf(`"tool_%d"`, i), fmt.Sprintf(`"t\u006f\u006fl.%d"`, i)},
			[]string{fmt.Sprintf(`"tool_%d"`, i%2), `"bad name"`, `null`, `7`, `"caf\u00e9"`, `""`}))
	}
	if r.IntN(2) == 0 {
		add(`"title"`, choose(r, []string{genString(r), "null"}, []string{"3"}))
	}
	if r.IntN(3) != 0 {
		add(`"description"`, choose(r, []string{genString(r), "null"}, []string{`{"a":1}`}))
	}
	if r.IntN(2) == 0 {
		add(`"annotations"`, choose(r,
			[]string{`{"readOnlyHint":true,"openWorldHint":false}`, `{"title":"T","destructiveHint":null,"idempotentHint":true}`,
				`{"ReadOnlyHint":true}`, `{"readonlyhint":false,"readOnlyHint":true}`, `{"r\u0065adOnlyHint":true}`,
				`{"títle":"x","vendor":{"a":1}}`, `null`, `{"ſitle":"long s"}`, `{"title":"\u00e9"}`},
			[]string{`{"readOnlyHint":"yes"}`, `{"title":5}`, `{"readOnlyHint":true,"readOnlyHint":false}`, `[]`}))
	}
	if r.IntN(15) != 0 {
		add(pick(r, `"inputSchema"`, `"inputSchema"`, `"input\u0053chema"`), choose(r, []string{genSchema(r, 1)}, []string{"null"}))
	}
	if r.IntN(4) == 0 {
		add(pick(r, `"outputSchema"`, `"_meta"`, `"icons"`), pick(r, `{"type":"object","type":"object"}`, `[{"src":"x"}]`, `{"$ref":"#"}`))
	}
	if r.IntN(30) == 0 && len(ms) > 0 {
		ms = append(ms, ms[r.IntN(len(ms))])
	}
	r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	if r.IntN(40) == 0 {
		return pick(r, "null", `"tool"`, "[]", "1")
	}
	var b strings.Builder
	b.WriteString("{" + ws(r))
	for i, m := range ms {
		if i > 0 {
			b.WriteString("," + ws(r))
		}
		b.WriteString(m.k + ":" + ws(r) + m.v)
	}
	b.WriteString("}")
	return b.String()
}

// genPage writes a random tools/list response, its envelope mostly well
// formed.
func genPage(r *rand.Rand) string {
	var tools strings.Builder
	n := r.IntN(12)
	for i := range n {
		if i > 0 {
			tools.WriteString("," + ws(r))
		}
		tools.WriteString(genTool(r, i))
	}
	list := "[" + tools.String() + "]"
	if r.IntN(30) == 0 {
		list = pick(r, "null", "{}", `"tools"`)
	}
	result := `{"tools":` + list
	if r.IntN(2) == 0 {
		result += `,"nextCursor":` + pick(r, `"2"`, `""`, `null`, `7`, `"c\u0032"`)
	}
	if r.IntN(6) == 0 {
		result += `,"resultType":` + pick(r, `"complete"`, `"input_required"`, `"other"`, `null`, `1`)
	}
	if r.IntN(40) == 0 {
		result += `,"tools":[]`
	}
	result += "}"
	id := `"` + diffID + `"`
	switch r.IntN(40) {
	case 0:
		id = `"other"`
	case 1:
		return `{"jsonrpc":"2.0","id":` + id + `,"id":` + id + `,"result":` + result + `}`
	case 2:
		return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `} x`
	case 3:
		return `{"jsonrpc":"2.0","id":` + id + `,"result":[]}`
	case 4:
		return `{"jsonrpc":"2.0","method":"notifications/message","params":` + result + `}`
	case 5:
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32000,"message":"m","data":` + result + `}}`
	}
	return `{` + ws(r) + `"jsonrpc":"2.0",` + ws(r) + `"id":` + id + `,"result":` + ws(r) + result + ws(r) + `}`
}
