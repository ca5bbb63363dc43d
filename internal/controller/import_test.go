package controller_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

var _ = Describe("Import", func() {
	// 2,500 generated tools plus the five built-in ones.
	const catalogSize = 2500
	const offered = catalogSize + 5

	DescribeTable("imports a 2,500-tool catalog over pages",
		func(opts mcpserver.Options, pages int) {
			ns := newNamespace()
			opts.Tools = catalogSize
			up := startMCP(opts)
			// The default 20s budget is for one server; a 2,500-tool catalog
			// read under the race detector can need more.
			createServer(ns, "big", up.URL, withMaxTools(3000), withTimeout(min(bound(20*time.Second), 5*time.Minute)))

			// An upper bound, not a target: the import's speed is a
			// benchmark's business, and a loaded machine needs more.
			srv := waitReady(ns, "big", 5*time.Minute)
			Expect(srv.Status.Tools).To(Equal(&mcpv1alpha1.ToolCounts{Offered: offered, Imported: offered, DefinitionBytes: srv.Status.Tools.DefinitionBytes}))
			// What the tools store counts against the namespace's limit.
			Expect(srv.Status.Tools.DefinitionBytes).To(BeNumerically(">", offered*64))
			Expect(srv.Status.SkippedTools).To(BeEmpty())

			tools := listTools(ns)
			Expect(tools).To(HaveLen(offered))
			remote := map[string]int{}
			for _, t := range tools {
				remote[t.Spec.RemoteName]++
				Expect(t.Spec.Enabled).To(BeFalse(), "imported tools start disabled")
				Expect(t.Labels).To(HaveKeyWithValue(mcpv1alpha1.LabelServer, "big"))
				Expect(t.OwnerReferences).To(BeEmpty(), "no owner reference: deleting the server must not delete its tools")
			}
			for _, name := range up.ToolNames() {
				Expect(remote).To(HaveKeyWithValue(name, 1), "every offered tool is imported once")
			}

			// One tool in full: what the import and the tool controller write.
			last := mcpserver.CatalogToolName(catalogSize)
			Eventually(toolConditions(ns, toolObjectName("big", last)), bound(time.Minute)).
				Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled))
			t := getTool(ns, toolObjectName("big", last))
			Expect(t.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionImported, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
			Expect(t.Status.Description).To(Equal("Catalog tool number 2500."))
			Expect(t.Status.LocalName).To(Equal("mcp_big_" + last))
			Expect(t.Status.Group).To(Equal("mcp_big"))
			Expect(t.Status.EffectiveDataClass).To(Equal(mcpv1alpha1.DataClassInternal))
			Expect(t.Status.EffectiveApprovalRequired).To(Equal(boolPtr(true)))
			Expect(t.Status.Effect).To(Equal(mcpv1alpha1.EffectNonIdempotentWrite))
			Expect(t.Status.RequiresAdmin).To(BeTrue())
			Expect(t.Status.DefinitionHash).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
			Expect(t.Status.Hints).NotTo(BeNil())
			Expect(t.Status.Hints.ReadOnlyHint).To(Equal(boolPtr(true)))
			var schema map[string]any
			Expect(json.Unmarshal(t.Status.InputSchema.Raw, &schema)).To(Succeed())
			Expect(schema).To(HaveKeyWithValue("type", "object"))
			Expect(schema).To(HaveKey("properties"))

			// By now the tool controller has caught up with thousands of
			// events, each of which also woke the server's controller.
			Expect(handshakes(up)).To(Equal(1), "one import, which also counts as the first probe; the tools it created did not cause a second one")
			Expect(up.Stats().Methods["tools/list"]).To(Equal(pages), "the catalog came in pages, each read once")
		},
		Entry("from the go-sdk server", mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, PageSize: 250}, 11),
		Entry("from the mcp-go server", mcpserver.Options{Flavor: mcpserver.MCPGo, PageSize: 500}, 6),
	)
})

var _ = Describe("An import's first status", func() {
	It("is complete, so that a new tool costs two writes and nothing more", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, Tools: 30})
		mark := requests.mark()
		createServer(ns, "whole", up.URL)
		srv := waitReady(ns, "whole", 30*time.Second)
		offered := 30 + len(mcpserver.BuiltinTools())
		Expect(srv.Status.Tools.Imported).To(Equal(int32(offered)))

		// Read right after CatalogSynced, before the tool controller could
		// have added anything: every tool already shows its view.
		tools := listTools(ns)
		Expect(tools).To(HaveLen(offered))
		for _, t := range tools {
			Expect(t.Status.LocalName).To(Equal("mcp_whole_"+t.Spec.RemoteName), t.Name)
			Expect(t.Status.ObservedGeneration).To(Equal(t.Generation), t.Name)
			Expect(t.Status.EffectiveDataClass).To(Equal(mcpv1alpha1.DataClassInternal), t.Name)
			Expect(t.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled), t.Name)
			Expect(t.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionImported, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded), t.Name)
		}
		toolWrites := func() []apiRequest { return requests.writes(mark, "/namespaces/"+ns+"/mcptools") }
		Consistently(toolWrites, settle).Should(HaveLen(2*offered), "one apply of each tool and one write of its status, and no other write: the McpTool controller found every view current")
		statusWrites := func() []apiRequest {
			return requests.match(mark, func(r apiRequest) bool {
				return r.isWrite() && r.manager == governance.FieldManagerToolStatus
			}, []string{"/namespaces/" + ns + "/mcptools"})
		}
		Expect(statusWrites()).To(HaveLen(offered), "every status write is the one writer's")

		// A change only the McpTool controller sees (enabling a tool) is
		// written too, by the same writer.
		echo := toolObjectName("whole", mcpserver.ToolEcho)
		enableApproved(ns, echo)
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		Expect(len(statusWrites())).To(BeNumerically(">", offered))
	})
})
