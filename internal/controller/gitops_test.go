package controller_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// gitOpsManager is the field manager a GitOps tool would apply with.
const gitOpsManager = "argocd-controller"

// applyFromGit declares an McpTool the way a GitOps tool does: server-side
// apply of the spec only, with its own field manager. approved is the
// definition hash Git pins; empty pins none.
func applyFromGit(ns, server, remote string, enabled bool, approved string) {
	spec := mcpac.McpToolSpec().
		WithServerRef(mcpac.LocalObjectReference().WithName(server)).
		WithRemoteName(remote).
		WithEnabled(enabled)
	if approved != "" {
		spec.WithApprovedDefinitionHash(approved)
	}
	obj := mcpac.McpTool(toolObjectName(server, remote), ns).WithSpec(spec)
	ExpectWithOffset(1, k8sClient.Apply(context.Background(), obj, client.FieldOwner(gitOpsManager), client.ForceOwnership)).To(Succeed())
}

// importedHash waits until an import has written the tool's definition and
// returns its hash: what a person reviews before approving.
func importedHash(ns, name string) string {
	var hash string
	EventuallyWithOffset(1, func(g Gomega) {
		t := &mcpv1alpha1.McpTool{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, t)).To(Succeed())
		g.Expect(t.Status.DefinitionHash).NotTo(BeEmpty())
		hash = t.Status.DefinitionHash
	}).Should(Succeed())
	return hash
}

// approve records a person's approval of the tool's current definition, as
// kubectl mcp approve does, and returns the approved hash.
func approve(ns, name string) string {
	hash := importedHash(ns, name)
	t := getTool(ns, name)
	patch := client.MergeFrom(t.DeepCopy())
	t.Spec.ApprovedDefinitionHash = hash
	ExpectWithOffset(1, k8sClient.Patch(context.Background(), t, patch, client.FieldOwner("kubectl-patch"))).To(Succeed())
	return hash
}

// enableApproved enables a tool and approves its current definition, the
// two decisions that make an imported tool servable.
func enableApproved(ns, name string) string {
	setEnabled(ns, name, true)
	return approve(ns, name)
}

// setEnabled changes spec.enabled the way kubectl patch does.
func setEnabled(ns, name string, enabled bool) {
	t := getTool(ns, name)
	patch := client.MergeFrom(t.DeepCopy())
	t.Spec.Enabled = enabled
	ExpectWithOffset(1, k8sClient.Patch(context.Background(), t, patch, client.FieldOwner("kubectl-patch"))).To(Succeed())
}

// managerOwns reports whether a field manager's managed fields mention the
// given field path fragment (as in "f:enabled").
func managerOwns(t *mcpv1alpha1.McpTool, mgr, field string) bool {
	for _, mf := range t.ManagedFields {
		if mf.Manager == mgr && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), field) {
			return true
		}
	}
	return false
}

var _ = Describe("GitOps and imports", func() {
	It("fills the status of a tool declared enabled in Git before the import and never flips enabled", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		echo := toolObjectName("gh", mcpserver.ToolEcho)
		applyFromGit(ns, "gh", mcpserver.ToolEcho, true, "")

		// Before the server exists, the tool is not servable.
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonServerNotFound))

		createServer(ns, "gh", up.URL)
		waitReady(ns, "gh", 30*time.Second)
		// Enabled, imported, but nobody approved a definition: enabling
		// before the first import does not approve what the import brings.
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionNotApproved))
		Consistently(toolConditions(ns, echo), settle).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionNotApproved))

		// Git pins the definition it reviewed.
		reviewed := importedHash(ns, echo)
		applyFromGit(ns, "gh", mcpserver.ToolEcho, true, reviewed)
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))

		t := getTool(ns, echo)
		Expect(t.Spec.Enabled).To(BeTrue())
		Expect(t.Status.Description).To(Equal("Returns its text argument."))
		Expect(t.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionImported, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		Expect(managerOwns(t, gitOpsManager, `"f:enabled"`)).To(BeTrue(), "Git still owns spec.enabled")
		Expect(managerOwns(t, gitOpsManager, `"f:approvedDefinitionHash"`)).To(BeTrue(), "Git owns the approval")
		Expect(managerOwns(t, governance.FieldManagerImporter, `"f:enabled"`)).To(BeFalse(), "the importer never claims spec.enabled")
		Expect(managerOwns(t, governance.FieldManagerImporter, `"f:approvedDefinitionHash"`)).To(BeFalse(), "the importer never claims the approval")
		Expect(t.OwnerReferences).To(BeEmpty(), "no owner reference lets the garbage collector take the tool with its server")

		// A second import does not flip it either.
		v := requestImport(ns, "gh")
		waitImportHandled(ns, "gh", v)
		Expect(getTool(ns, echo).Spec.Enabled).To(BeTrue())

		// Git can still disable it: the importer holds no claim that
		// conflicts with that.
		applyFromGit(ns, "gh", mcpserver.ToolEcho, false, reviewed)
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled))
	})

	It("keeps an enabled tool the server stopped offering with Imported=False and deletes a disabled one", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.MCPGo, Stateless: true})
		// Declared in Git, disabled, and never offered: the import did not
		// create it, so it does not delete it.
		applyFromGit(ns, "gone", "never_offered", false, "")
		createServer(ns, "gone", up.URL)
		waitReady(ns, "gone", 30*time.Second)
		never := getTool(ns, toolObjectName("gone", "never_offered"))
		c := meta.FindStatusCondition(never.Status.Conditions, mcpv1alpha1.ConditionImported)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Reason).To(Equal(mcpv1alpha1.ReasonRemovedFromServer))
		Expect(c.Message).NotTo(ContainSubstring("enabled"), "the message does not claim a reason that is not true")

		echo := toolObjectName("gone", mcpserver.ToolEcho)
		fail := toolObjectName("gone", mcpserver.ToolFail)
		enableApproved(ns, echo)
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))

		up.RemoveTools(mcpserver.ToolEcho, mcpserver.ToolFail)
		v := requestImport(ns, "gone")
		srv := waitImportHandled(ns, "gone", v)

		Eventually(func() map[string]mcpv1alpha1.McpTool { return listTools(ns) }).ShouldNot(HaveKey(fail), "a disabled tool no longer offered is deleted")
		t := getTool(ns, echo)
		Expect(t.Spec.Enabled).To(BeTrue())
		Expect(t.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionImported, metav1.ConditionFalse, mcpv1alpha1.ReasonRemovedFromServer))
		Expect(t.Status.Description).To(Equal("Returns its text argument."), "the last definition stays visible")
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonRemovedFromServer))
		Expect(srv.Status.Tools).To(Equal(&mcpv1alpha1.ToolCounts{Offered: 3, Imported: 3, Enabled: 1, Removed: 1, DefinitionBytes: srv.Status.Tools.DefinitionBytes}))
		Expect(listTools(ns)).To(HaveLen(5), "three offered, the removed enabled one and the one from Git")

		// Offered again: imported again, and servable again.
		up.AddTools(mcpserver.ToolEcho)
		v = requestImport(ns, "gone")
		waitImportHandled(ns, "gone", v)
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionImported, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
	})
})

var _ = Describe("GitOps: a disabled tool declared in Git", func() {
	It("is kept, not deleted, when the server stops offering it, so the importer and Git do not fight", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true})
		applyFromGit(ns, "gitkept", mcpserver.ToolFail, false, "")
		createServer(ns, "gitkept", up.URL)
		waitReady(ns, "gitkept", 30*time.Second)
		fail := toolObjectName("gitkept", mcpserver.ToolFail)
		Expect(getTool(ns, fail).Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionImported, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))

		up.RemoveTools(mcpserver.ToolFail)
		v := requestImport(ns, "gitkept")
		waitImportHandled(ns, "gitkept", v)
		Consistently(func() map[string]mcpv1alpha1.McpTool { return listTools(ns) }, 2*time.Second).Should(HaveKey(fail), "a tool Git declares is not deleted")
		t := getTool(ns, fail)
		Expect(t.Spec.Enabled).To(BeFalse())
		Expect(t.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionImported, metav1.ConditionFalse, mcpv1alpha1.ReasonRemovedFromServer))
	})
})

var _ = Describe("Definition drift", func() {
	It("stops serving a tool whose definition changed upstream until the new definition is approved", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK})
		createServer(ns, "drift", up.URL)
		waitReady(ns, "drift", 30*time.Second)
		echo := toolObjectName("drift", mcpserver.ToolEcho)
		approved := enableApproved(ns, echo)
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))

		Expect(up.SetToolDescription(mcpserver.ToolEcho, "Returns its text argument, and now also mails it to someone.")).To(Succeed())
		v := requestImport(ns, "drift")
		waitImportHandled(ns, "drift", v)

		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionChanged))
		t := getTool(ns, echo)
		Expect(t.Status.Description).To(ContainSubstring("mails it"))
		Expect(t.Status.DefinitionHash).NotTo(Equal(approved))
		Expect(t.Spec.ApprovedDefinitionHash).To(Equal(approved), "the approval stays with the old definition")
		Expect(t.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionImported, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		rec := t.Status.ApprovedDefinition
		Expect(rec).NotTo(BeNil(), "the import keeps the text of the definition it replaced, because it was the approved one")
		Expect(rec.Hash).To(Equal(approved))
		Expect(rec.Description).NotTo(BeEmpty())
		Expect(rec.Description).NotTo(ContainSubstring("mails it"))
		Expect(rec.InputSchema).NotTo(BeNil())

		// Later importer writes of the same definition keep the record: the
		// server gets a shard label, which the next import copies to its
		// tools without a change of definition.
		changed := t.Status.DefinitionHash
		srv := getServer(ns, "drift")
		spatch := client.MergeFrom(srv.DeepCopy())
		srv.Labels = map[string]string{mcpv1alpha1.LabelShardKey: "a"}
		Expect(k8sClient.Patch(context.Background(), srv, spatch)).To(Succeed())
		v = requestImport(ns, "drift")
		waitImportHandled(ns, "drift", v)
		Eventually(func() string { return getTool(ns, echo).Labels[mcpv1alpha1.LabelShardKey] }).Should(Equal("a"))
		t = getTool(ns, echo)
		Expect(t.Status.DefinitionHash).To(Equal(changed), "the same definition was written again")
		Expect(t.Status.ApprovedDefinition).To(Equal(rec), "the approved text survives the importer's later writes")

		patch := client.MergeFrom(t.DeepCopy())
		t.Spec.ApprovedDefinitionHash = t.Status.DefinitionHash
		Expect(k8sClient.Patch(context.Background(), t, patch)).To(Succeed())
		Eventually(toolConditions(ns, echo)).Should(haveCondition(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))

		// The next change keeps the newly approved text, not the first one.
		reapproved := t.Spec.ApprovedDefinitionHash
		Expect(up.SetToolDescription(mcpserver.ToolEcho, "Returns its text argument, and now also posts it.")).To(Succeed())
		v = requestImport(ns, "drift")
		waitImportHandled(ns, "drift", v)
		Eventually(func() string {
			if r := getTool(ns, echo).Status.ApprovedDefinition; r != nil {
				return r.Hash
			}
			return ""
		}).Should(Equal(reapproved))
		Expect(getTool(ns, echo).Status.ApprovedDefinition.Description).To(ContainSubstring("mails it"))
	})
})

var _ = Describe("Server declaration", func() {
	It("passes a changed data class and approval on to every tool, never below what a tool tightened", func() {
		ns := newNamespace()
		up := startMCP(mcpserver.Options{Flavor: mcpserver.MCPGo, Stateless: true})
		createServer(ns, "decl", up.URL)
		waitReady(ns, "decl", 30*time.Second)
		echo := toolObjectName("decl", mcpserver.ToolEcho)
		fail := toolObjectName("decl", mcpserver.ToolFail)
		t := getTool(ns, fail)
		patch := client.MergeFrom(t.DeepCopy())
		t.Spec.ApprovalRequired = boolPtr(true)
		t.Spec.DataClass = mcpv1alpha1.DataClassRestricted
		Expect(k8sClient.Patch(context.Background(), t, patch)).To(Succeed())
		Eventually(func() mcpv1alpha1.DataClass { return getTool(ns, fail).Status.EffectiveDataClass }).Should(Equal(mcpv1alpha1.DataClassRestricted))

		srv := getServer(ns, "decl")
		patch = client.MergeFrom(srv.DeepCopy())
		srv.Spec.DataClass = mcpv1alpha1.DataClassConfidential
		srv.Spec.ApprovalRequired = boolPtr(false)
		Expect(k8sClient.Patch(context.Background(), srv, patch)).To(Succeed())

		Eventually(func(g Gomega) {
			e := &mcpv1alpha1.McpTool{}
			g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: echo}, e)).To(Succeed())
			g.Expect(e.Status.EffectiveDataClass).To(Equal(mcpv1alpha1.DataClassConfidential))
			g.Expect(e.Status.EffectiveApprovalRequired).To(Equal(boolPtr(false)))
		}).Should(Succeed())
		f := getTool(ns, fail)
		Expect(f.Status.EffectiveDataClass).To(Equal(mcpv1alpha1.DataClassRestricted))
		Expect(f.Status.EffectiveApprovalRequired).To(Equal(boolPtr(true)))
	})
})
