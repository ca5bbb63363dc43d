package controller_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// plainMCP is a minimal initialize-era MCP server (stateless, JSON answers)
// that serves tool definitions verbatim. The real libraries validate the
// tools they are given, so they cannot offer the invalid ones an import
// must skip.
func plainMCP(pageSize int, tools []string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Cursor          string `json:"cursor"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		answer := func(status int, body string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,` + body + `}`))
		}
		switch {
		case len(req.ID) == 0: // a notification
			w.WriteHeader(http.StatusAccepted)
		case req.Method == "initialize":
			answer(http.StatusOK, `"result":{"protocolVersion":`+strconv.Quote(req.Params.ProtocolVersion)+
				`,"capabilities":{"tools":{}},"serverInfo":{"name":"plain","version":"0.1"}}`)
		case req.Method == "tools/list":
			start, _ := strconv.Atoi(req.Params.Cursor)
			end := min(start+pageSize, len(tools))
			next := ""
			if end < len(tools) {
				next = `,"nextCursor":"` + strconv.Itoa(end) + `"`
			}
			answer(http.StatusOK, `"result":{"tools":[`+strings.Join(tools[start:end], ",")+`]`+next+`}`)
		default:
			// Includes server/discover: this server predates 2026-07-28.
			answer(http.StatusBadRequest, `"error":{"code":-32601,"message":"method not found"}`)
		}
	}))
	DeferCleanup(srv.Close)
	return srv.URL + mcpserver.Path
}

func toolJSON(name, schema string) string {
	return `{"name":` + strconv.Quote(name) + `,"description":"d","inputSchema":` + schema + `}`
}

var _ = Describe("Skipped tools", func() {
	It("imports the valid tools and lists every other one with its reason", func() {
		const ok = `{"type":"object","properties":{"q":{"type":"string"}}}`
		// Valid remotely, but mcp_odd_<name> is longer than the 128
		// characters agents accept as a tool name.
		longName := strings.Repeat("a", 121)
		url := plainMCP(3, []string{
			toolJSON("good_one", ok),
			toolJSON("bad name", ok),
			toolJSON(strings.Repeat("b", 129), ok),
			toolJSON("twice", ok),
			toolJSON("twice", ok),
			toolJSON("with_ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`),
			toolJSON("with_any_of", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"number"}]}}}`),
			`{"name":"no_schema","description":"d"}`,
			toolJSON(longName, ok),
		})
		ns := newNamespace()
		// An enabled tool that turns invalid upstream says why it is not
		// served.
		applyFromGit(ns, "odd", "with_ref", true, "")
		createServer(ns, "odd", url)
		srv := waitReady(ns, "odd", 30*time.Second)

		Expect(srv.Status.Tools).To(Equal(&mcpv1alpha1.ToolCounts{Offered: 9, Imported: 1, Skipped: 8, Enabled: 1, DefinitionBytes: srv.Status.Tools.DefinitionBytes}))
		Expect(srv.Status.SkippedTools).To(ConsistOf(
			mcpv1alpha1.SkippedTool{Name: "bad name", Reason: "InvalidName"},
			mcpv1alpha1.SkippedTool{Name: strings.Repeat("b", 64) + "...", Reason: "InvalidName"},
			mcpv1alpha1.SkippedTool{Name: "twice", Reason: "DuplicateName"},
			mcpv1alpha1.SkippedTool{Name: "twice", Reason: "DuplicateName"},
			mcpv1alpha1.SkippedTool{Name: "with_ref", Reason: "InvalidSchema"},
			mcpv1alpha1.SkippedTool{Name: "with_any_of", Reason: "InvalidSchema"},
			mcpv1alpha1.SkippedTool{Name: "no_schema", Reason: "MissingSchema"},
			mcpv1alpha1.SkippedTool{Name: longName, Reason: "NameTooLong"},
		))
		Expect(srv.Status.ServerInfo.Name).To(Equal("plain"))

		tools := listTools(ns)
		Expect(tools).To(HaveLen(2))
		Expect(tools).To(HaveKey(toolObjectName("odd", "good_one")))
		ref := toolObjectName("odd", "with_ref")
		Expect(tools[ref].Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionImported, metav1.ConditionFalse, "InvalidSchema"))
		Eventually(toolConditions(ns, ref)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, "InvalidSchema"))
	})

	It("lists at most 50 skipped tools and counts them all", func() {
		defs := []string{toolJSON("fine", `{"type":"object"}`)}
		for i := range 60 {
			defs = append(defs, toolJSON("bad name "+strconv.Itoa(i), `{"type":"object"}`))
		}
		ns := newNamespace()
		createServer(ns, "many", plainMCP(25, defs))
		srv := waitReady(ns, "many", 30*time.Second)
		Expect(srv.Status.Tools).To(Equal(&mcpv1alpha1.ToolCounts{Offered: 61, Imported: 1, Skipped: 60, DefinitionBytes: srv.Status.Tools.DefinitionBytes}))
		Expect(srv.Status.SkippedTools).To(HaveLen(50))
		Expect(srv.Status.SkippedTools[0]).To(Equal(mcpv1alpha1.SkippedTool{Name: "bad name 0", Reason: "InvalidName"}))
	})
})
