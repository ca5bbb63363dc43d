package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/console"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/test/controlplane"
)

// session is a browser's session with a console, without the browser: the
// requests its page sends, with its cookie and CSRF token.
type session struct {
	base string
	hc   *http.Client
	csrf string
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

func openSession(t *testing.T, con *console.Console) *session {
	t.Helper()
	jar, err := cookiejar.New(nil)
	must(t, err)
	hc := &http.Client{Jar: jar}
	// The login link redirects to the page, with the session cookie.
	resp, err := hc.Get(con.URL())
	must(t, err)
	page, err := io.ReadAll(resp.Body)
	must(t, err)
	_ = resp.Body.Close()
	m := csrfMeta.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("the login link led to %d without a CSRF token:\n%s", resp.StatusCode, page)
	}
	return &session{base: "http://" + resp.Request.URL.Host, hc: hc, csrf: string(m[1])}
}

// post sends a change as the page does and returns the status and the
// console's answer.
func (s *session) post(t *testing.T, path string, body any) (int, string) {
	t.Helper()
	raw, err := json.Marshal(body)
	must(t, err)
	req, err := http.NewRequest(http.MethodPost, s.base+path, strings.NewReader(string(raw)))
	must(t, err)
	req.Header.Set("Origin", s.base)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", s.csrf)
	resp, err := s.hc.Do(req)
	must(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(out)
}

// view is the console's current view.
func (s *session) view(t *testing.T) (console.View, error) {
	t.Helper()
	resp, err := s.hc.Get(s.base + "/api/view")
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return console.View{}, fmt.Errorf("the view: %d", resp.StatusCode)
	}
	var v console.View
	return v, json.NewDecoder(resp.Body).Decode(&v)
}

func fhash(c string) string { return "sha256:" + strings.Repeat(c, 64) }

// A person approves a prompt in the console only with the definition the
// page showed: a hash that is no longer the current one is refused, and
// nothing is written. They enable a resource, as the person: RBAC on
// mcpprompts and mcpresources decides, as for kubectl. The console needs
// only the API server: the importer's status is written here, as it
// would write it.
func TestTheConsoleApprovesPromptsAndEnablesResources(t *testing.T) {
	plane := controlplane.Start(t)
	ctx := context.Background()
	admin := plane.Client
	const ns = "agents"
	must(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	// Created as the importer applies them: its manager owns the
	// identity, not spec.enabled or the approval.
	importer := client.FieldOwner(governance.FieldManagerImporter)
	must(t, admin.Apply(ctx, mcpac.McpPrompt("docs.review-code", ns).WithSpec(mcpac.McpPromptSpec().
		WithServerRef(mcpac.LocalObjectReference().WithName("docs")).WithRemoteName("review_code")), importer))
	p := &mcpv1alpha1.McpPrompt{}
	must(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs.review-code"}, p))
	p.Status.DefinitionHash, p.Status.Description = fhash("1"), "Reviews code."
	must(t, admin.Status().Update(ctx, p))
	must(t, admin.Apply(ctx, mcpac.McpResource("docs.readme", ns).WithSpec(mcpac.McpResourceSpec().
		WithServerRef(mcpac.LocalObjectReference().WithName("docs")).WithURI("docs://readme")), importer))
	r := &mcpv1alpha1.McpResource{}
	must(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs.readme"}, r))
	r.Status.DefinitionHash, r.Status.Name = fhash("2"), "readme"
	must(t, admin.Status().Update(ctx, r))

	// Dana reviews prompts and resources, and may read the rest.
	u, err := plane.Env.AddUser(envtest.User{Name: "dana", Groups: []string{"system:authenticated"}}, nil)
	must(t, err)
	must(t, admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dana"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcpprompts", "mcpresources"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcpservers", "mcptools", "mcpcallapprovals"}, Verbs: []string{"get", "list", "watch"}},
	}}))
	must(t, admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dana"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "dana"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dana"}}}))
	dana, err := client.NewWithWatch(u.Config(), client.Options{Scheme: scheme.New()})
	must(t, err)
	eventually(t, "dana's RBAC", func() error {
		return dana.Get(ctx, client.ObjectKeyFromObject(p), &mcpv1alpha1.McpPrompt{})
	})

	con, err := console.Listen(console.Options{Client: dana, Namespace: ns})
	must(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- con.Serve(sctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the console ended with %v", err)
		}
	})
	s := openSession(t, con)

	// Both wait for review, labelled by kind, and nothing was refused.
	eventually(t, "the prompt and the resource in the review queue", func() error {
		v, err := s.view(t)
		if err != nil {
			return err
		}
		if len(v.Problems) != 0 {
			return fmt.Errorf("problems: %+v", v.Problems)
		}
		var got []string
		for _, r := range v.Reviews {
			got = append(got, r.ObjectKind+" "+r.Name+" "+r.CurrentHash)
		}
		if strings.Join(got, ",") != "McpResource docs.readme "+fhash("2")+",McpPrompt docs.review-code "+fhash("1") {
			return fmt.Errorf("reviews: %q", got)
		}
		return nil
	})

	// The server changes the prompt after the page showed hash 1: the
	// approval of hash 1 is refused, and nothing is approved.
	must(t, admin.Get(ctx, client.ObjectKeyFromObject(p), p))
	p.Status.DefinitionHash, p.Status.Description = fhash("3"), "Reviews code, and mails it elsewhere."
	must(t, admin.Status().Update(ctx, p))
	code, out := s.post(t, "/api/tools/approve", map[string]any{"kind": "McpPrompt", "namespace": ns, "name": p.Name, "hash": fhash("1")})
	if code != http.StatusConflict || !strings.Contains(out, "the current definition is "+fhash("3")) {
		t.Fatalf("approving a definition no longer current: %d %s, want 409", code, out)
	}
	must(t, admin.Get(ctx, client.ObjectKeyFromObject(p), p))
	if p.Spec.ApprovedDefinitionHash != "" {
		t.Fatalf("a stale approval was written: %s", p.Spec.ApprovedDefinitionHash)
	}
	// The current one is approved, as kubectl mcp approve would.
	code, out = s.post(t, "/api/tools/approve", map[string]any{"kind": "McpPrompt", "namespace": ns, "name": p.Name, "hash": fhash("3")})
	if code != http.StatusOK || !strings.Contains(out, "McpPrompt "+ns+"/"+p.Name) {
		t.Fatalf("approving the current definition: %d %s", code, out)
	}
	must(t, admin.Get(ctx, client.ObjectKeyFromObject(p), p))
	if p.Spec.ApprovedDefinitionHash != fhash("3") || p.Spec.Enabled {
		t.Fatalf("approved %q, enabled %t; want %s, still disabled", p.Spec.ApprovedDefinitionHash, p.Spec.Enabled, fhash("3"))
	}

	// Enabling the resource writes spec.enabled, and nothing else.
	code, out = s.post(t, "/api/tools/enable", map[string]any{"kind": "McpResource", "namespace": ns, "name": r.Name, "enabled": true})
	if code != http.StatusOK || !strings.Contains(out, "McpResource "+ns+"/"+r.Name+" enabled") {
		t.Fatalf("enabling the resource: %d %s", code, out)
	}
	must(t, admin.Get(ctx, client.ObjectKeyFromObject(r), r))
	if !r.Spec.Enabled || r.Spec.ApprovedDefinitionHash != "" {
		t.Fatalf("the resource: enabled %t, approved %q", r.Spec.Enabled, r.Spec.ApprovedDefinitionHash)
	}
	// A name of the other kind is not found as this one: the kind routes.
	code, out = s.post(t, "/api/tools/enable", map[string]any{"kind": "McpPrompt", "namespace": ns, "name": r.Name, "enabled": true})
	if code != http.StatusNotFound {
		t.Errorf("enabling a resource named as a prompt: %d %s, want 404", code, out)
	}

	eventually(t, "the view: the prompt approved, the resource enabled", func() error {
		v, err := s.view(t)
		if err != nil {
			return err
		}
		if len(v.Reviews) != 1 || v.Reviews[0].ObjectKind != "McpResource" {
			return fmt.Errorf("reviews: %+v", v.Reviews)
		}
		if len(v.Namespaces) != 1 || len(v.Namespaces[0].Features) != 2 {
			return fmt.Errorf("namespaces: %+v", v.Namespaces)
		}
		for _, f := range v.Namespaces[0].Features {
			if f.ObjectKind == "McpResource" && !f.Enabled {
				return errors.New("the resource is not shown enabled")
			}
		}
		return nil
	})
}
