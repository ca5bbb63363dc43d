package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// The Argo CD health checks (config/argocd/health) are Lua. These specs run
// them the way Argo CD does — the live object turned into Lua tables, the
// script run with it as the global obj, the table it returns read for status
// and message — against objects the controllers wrote on the API server.

// argoHealth is what a health script returned.
type argoHealth struct {
	Status  string
	Message string
}

// healthScript reads the script for kind (McpServer → mcpserver.lua).
func healthScript(kind string) string {
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "argocd", "health", strings.ToLower(kind)+".lua"))
	ExpectWithOffset(2, err).NotTo(HaveOccurred())
	return string(b)
}

// runHealth runs kind's health script on obj as Argo CD sees it: the JSON
// form of the object, with apiVersion and kind, as nested Lua tables.
func runHealth(kind string, obj client.Object) (argoHealth, error) {
	obj.GetObjectKind().SetGroupVersionKind(mcpv1alpha1.GroupVersion.WithKind(kind))
	raw, err := json.Marshal(obj)
	if err != nil {
		return argoHealth{}, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return argoHealth{}, err
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	// Argo CD opens the base, table, string and math libraries (and a safe
	// os); the scripts need no more.
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, v))
	if err := L.DoString(healthScript(kind)); err != nil {
		return argoHealth{}, err
	}
	tbl, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return argoHealth{}, fmt.Errorf("the script returned %s, not a table", L.Get(-1).Type())
	}
	h := argoHealth{}
	if s, ok := tbl.RawGetString("status").(lua.LString); ok {
		h.Status = string(s)
	}
	if s, ok := tbl.RawGetString("message").(lua.LString); ok {
		h.Message = string(s)
	}
	return h, nil
}

// toLua converts decoded JSON to Lua values as Argo CD's lua package does:
// objects become tables keyed by string, arrays tables indexed from 1,
// numbers, strings and booleans the Lua scalars, null nil.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for i, e := range v {
			t.RawSetInt(i+1, toLua(L, e))
		}
		return t
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	default:
		return lua.LNil
	}
}

func serverHealth(ns, name string) func(g Gomega) argoHealth {
	return func(g Gomega) argoHealth {
		srv := &mcpv1alpha1.McpServer{}
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, srv)).To(Succeed())
		h, err := runHealth("McpServer", srv)
		g.Expect(err).NotTo(HaveOccurred())
		return h
	}
}

func toolHealth(ns, name string) func(g Gomega) argoHealth {
	return func(g Gomega) argoHealth {
		t := &mcpv1alpha1.McpTool{}
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, t)).To(Succeed())
		h, err := runHealth("McpTool", t)
		g.Expect(err).NotTo(HaveOccurred())
		return h
	}
}

func healthIs(status, messagePart string) OmegaMatcher {
	return And(
		HaveField("Status", status),
		HaveField("Message", ContainSubstring(messagePart)),
	)
}

var _ = Describe("Argo CD health checks", func() {
	It("reads servers as Healthy, Suspended, Degraded and Progressing", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})

		createServer(ns, "fine", up.URL)
		waitReady(ns, "fine", 30*time.Second)
		Eventually(serverHealth(ns, "fine")).Should(healthIs("Healthy", "server reachable"))

		// Suspended by spec: Suspended, whatever the conditions said.
		srv := getServer(ns, "fine")
		patch := client.MergeFrom(srv.DeepCopy())
		srv.Spec.Suspend = true
		Expect(k8sClient.Patch(context.Background(), srv, patch)).To(Succeed())
		Eventually(serverHealth(ns, "fine")).Should(healthIs("Suspended", "spec.suspend"))

		// Nothing listens: a settled failure, Degraded with the reason.
		createServer(ns, "nowhere", "http://127.0.0.1:1/mcp")
		Eventually(serverConditions(ns, "nowhere")).Should(haveCondition(mcpv1alpha1.ConditionReachable, metav1.ConditionFalse, mcpv1alpha1.ReasonUnreachable))
		Eventually(serverHealth(ns, "nowhere")).Should(healthIs("Degraded", mcpv1alpha1.ReasonUnreachable))

		// A redirect only a spec change can cure: Stalled, Degraded.
		f := newFront(nil)
		f.set(faultRedirect)
		createServer(ns, "moved", f.url)
		Eventually(serverConditions(ns, "moved")).Should(haveCondition(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonRedirected))
		Eventually(serverHealth(ns, "moved")).Should(healthIs("Degraded", mcpv1alpha1.ReasonRedirected))

		// Waiting for a Secret that does not exist yet is work in progress
		// (the operator retries), as kstatus says too; once it exists the
		// server becomes Healthy.
		createServer(ns, "waits", up.URL, withBearer("later"))
		Eventually(serverConditions(ns, "waits")).Should(haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotFound))
		Consistently(serverHealth(ns, "waits"), settle).Should(HaveField("Status", "Progressing"))
		putSecret(ns, "later", newToken())
		Eventually(serverHealth(ns, "waits"), bound(30*time.Second)).Should(healthIs("Healthy", "server reachable"))
	})

	It("reads tools as Healthy when enabled and Ready, Suspended when disabled, Degraded when not served", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.MCPGo, Stateless: true})
		createServer(ns, "tools", up.URL)
		waitReady(ns, "tools", 30*time.Second)
		settledTools(ns, 5)

		echo := toolObjectName("tools", mcpserver.ToolEcho)
		Eventually(toolHealth(ns, echo)).Should(healthIs("Suspended", "not enabled"))

		enableApproved(ns, echo)
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		Eventually(toolHealth(ns, echo)).Should(healthIs("Healthy", "enabled"))

		// Its server suspended: the enabled tool is not served.
		srv := getServer(ns, "tools")
		patch := client.MergeFrom(srv.DeepCopy())
		srv.Spec.Suspend = true
		Expect(k8sClient.Patch(context.Background(), srv, patch)).To(Succeed())
		Eventually(toolHealth(ns, echo)).Should(healthIs("Degraded", mcpv1alpha1.ReasonServerNotReady))
	})

	It("reads a delegation profile by its Ready condition", func() {
		ns := newNamespace()
		profile(ns)
		p := func(g Gomega) argoHealth {
			var obj mcpv1alpha1.McpDelegationProfile
			g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "idp"}, &obj)).To(Succeed())
			h, err := runHealth("McpDelegationProfile", &obj)
			g.Expect(err).NotTo(HaveOccurred())
			return h
		}
		// Its client secret not there yet: the operator waits and looks
		// again (Reconciling), which is progress, not failure.
		Eventually(profileConditions(ns)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotFound))
		Eventually(p).Should(healthIs("Progressing", "waiting for the client secret"))
		putSecret(ns, "idp", newToken())
		putSecret(ns, "subject", newToken())
		Eventually(profileConditions(ns)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		Eventually(p).Should(HaveField("Status", "Healthy"))
	})

	It("reads an access policy by its Ready condition", func() {
		ns := newNamespace()
		accessPolicy(ns, "support-agent", "*")
		p := func(g Gomega) argoHealth {
			h, err := runHealth("McpAccessPolicy", getAccessPolicy(g, ns))
			g.Expect(err).NotTo(HaveOccurred())
			return h
		}
		// A spec the operator found invalid needs a person: Degraded.
		Eventually(p).Should(healthIs("Degraded", `spec.serviceAccounts lists "*"`))
		fixed := getAccessPolicy(Default, ns)
		before := fixed.DeepCopy()
		fixed.Spec.ServiceAccounts = []string{"support-agent"}
		Expect(k8sClient.Patch(context.Background(), fixed, client.MergeFrom(before))).To(Succeed())
		Eventually(p).Should(HaveField("Status", "Healthy"))
	})
})

// The branches real objects rarely sit in long enough to catch (a spec the
// controller has not observed yet, work in progress, no status at all) are
// driven with objects whose status is set by hand.
var _ = Describe("Argo CD health checks on hand-made status", func() {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "m", LastTransitionTime: metav1.Now()}
	}
	DescribeTable("McpServer",
		func(gen, observed int64, conds []metav1.Condition, suspend bool, want string) {
			srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Name: "s", Generation: gen}}
			srv.Spec.Suspend = suspend
			srv.Status.ObservedGeneration = observed
			srv.Status.Conditions = conds
			h, err := runHealth("McpServer", srv)
			Expect(err).NotTo(HaveOccurred())
			Expect(h.Status).To(Equal(want), h.Message)
		},
		Entry("no status yet", int64(1), int64(0), nil, false, "Progressing"),
		Entry("spec not observed yet", int64(2), int64(1), []metav1.Condition{cond("Ready", metav1.ConditionTrue, "Succeeded")}, false, "Progressing"),
		Entry("reconciling", int64(1), int64(1), []metav1.Condition{cond("Ready", metav1.ConditionFalse, "Progressing"), cond("Reconciling", metav1.ConditionTrue, "Progressing")}, false, "Progressing"),
		Entry("stalled wins over reconciling", int64(1), int64(1), []metav1.Condition{cond("Reconciling", metav1.ConditionTrue, "Progressing"), cond("Stalled", metav1.ConditionTrue, "InvalidSpec")}, false, "Degraded"),
		Entry("ready unknown", int64(1), int64(1), []metav1.Condition{cond("Ready", metav1.ConditionUnknown, "NotProbed")}, false, "Progressing"),
		Entry("suspended before any status", int64(1), int64(0), nil, true, "Suspended"),
	)
	It("fails no script on an object without spec or status", func() {
		for _, kind := range []string{"McpServer", "McpTool", "McpDelegationProfile", "McpAccessPolicy"} {
			var obj client.Object
			switch kind {
			case "McpServer":
				obj = &mcpv1alpha1.McpServer{}
			case "McpTool":
				obj = &mcpv1alpha1.McpTool{}
			case "McpDelegationProfile":
				obj = &mcpv1alpha1.McpDelegationProfile{}
			default:
				obj = &mcpv1alpha1.McpAccessPolicy{}
			}
			h, err := runHealth(kind, obj)
			Expect(err).NotTo(HaveOccurred(), kind)
			Expect(h.Status).To(BeElementOf("Progressing", "Healthy"), kind)
		}
	})
})

// The argocd-cm snippet in docs/gitops.md carries the scripts verbatim, under
// Argo CD's key for each kind.
var _ = Describe("Argo CD health check documentation", func() {
	It("embeds every script under resource.customizations.health.<group>_<kind>", func() {
		doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "gitops.md"))
		Expect(err).NotTo(HaveOccurred())
		var cm *corev1.ConfigMap
		for _, block := range strings.Split(string(doc), "```yaml\n")[1:] {
			body := block[:strings.Index(block, "```")]
			var c corev1.ConfigMap
			if yaml.Unmarshal([]byte(body), &c) == nil && c.Kind == "ConfigMap" && c.Name == "argocd-cm" {
				cm = &c
			}
		}
		Expect(cm).NotTo(BeNil(), "docs/gitops.md has no argocd-cm block")
		for _, kind := range []string{"McpServer", "McpTool", "McpDelegationProfile", "McpAccessPolicy"} {
			key := "resource.customizations.health." + mcpv1alpha1.GroupVersion.Group + "_" + kind
			Expect(cm.Data).To(HaveKeyWithValue(key, healthScript(kind)), key)
		}
		Expect(cm.Data).To(HaveLen(4))
	})
})
