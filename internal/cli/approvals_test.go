package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/review"
	"github.com/mcp-catalog/operator/test/capture"
	"github.com/mcp-catalog/operator/test/poll"
)

// installApprovalPolicy creates the admission policy and approver role
// the operator ships, and waits until the API server enforces the policy.
func (e *clusterEnv) installApprovalPolicy(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "policy", "call_approvals.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			if err := e.c.Create(context.Background(), u); err != nil {
				t.Fatal(err)
			}
		}
	}
	poll.Until(t, 30*time.Second, "the approval admission policy enforced", func() error {
		a := e.pendingApproval(t, "probe", "someone")
		// Nobody is this user: only an enforced policy refuses the write.
		a.Spec.Decision, a.Spec.DecidedBy = mcpv1alpha1.CallApproved, "not-the-writer"
		if err := e.c.Update(context.Background(), a); err == nil {
			return errors.New("a decision by someone else than the writer was accepted")
		}
		return nil
	})
}

// pendingApproval creates an undecided McpCallApproval for caller, as the
// gateway does.
func (e *clusterEnv) pendingApproval(t *testing.T, name, caller string) *mcpv1alpha1.McpCallApproval {
	t.Helper()
	a := &mcpv1alpha1.McpCallApproval{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, GenerateName: name + "-"},
		Spec: mcpv1alpha1.McpCallApprovalSpec{
			Tool: "docs.delete-page", LocalName: "mcp_docs_delete_page", Server: "docs", Caller: caller,
			DataClass: mcpv1alpha1.DataClassInternal, ArgumentsHash: "sha256:" + strings.Repeat("ab", 32),
			DefinitionHash: "sha256:def", ExpiresAt: metav1.Time{Time: time.Now().Add(time.Hour)}, Seal: "s",
		},
	}
	if err := e.c.Create(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

// as is a client acting as user, allowed to decide approvals in the
// namespace through the shipped call-approver ClusterRole.
func (e *clusterEnv) as(t *testing.T, user string) client.Client {
	t.Helper()
	if err := e.c.Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, GenerateName: "approver-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "call-approver"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(e.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	// RBAC takes a moment to see a new binding.
	poll.Until(t, 10*time.Second, user+" allowed to list approvals", func() error {
		return c.List(context.Background(), &mcpv1alpha1.McpCallApprovalList{}, client.InNamespace(e.ns))
	})
	return c
}

func (e *clusterEnv) runAs(c client.Client, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(Streams{In: strings.NewReader(""), Out: &out, Err: &errb, NewKubeClient: func() (client.Client, string) { return c, e.ns }}, args)
	return code, out.String(), errb.String()
}

func TestCallApprovalCommands(t *testing.T) {
	e := startCluster(t)
	e.installApprovalPolicy(t)
	ctx := context.Background()
	bot := "system:serviceaccount:" + e.ns + ":bot"
	one := e.pendingApproval(t, "call", bot)
	two := e.pendingApproval(t, "call", bot)
	alice := e.as(t, "alice")

	code, out, errOut := e.runAs(alice, "approvals")
	if code != ExitOK {
		t.Fatalf("approvals: exit %d: %s", code, errOut)
	}
	for _, want := range []string{one.Name, two.Name, "Pending", bot, "docs.delete-page"} {
		if !strings.Contains(out, want) {
			t.Errorf("approvals does not show %q:\n%s", want, out)
		}
	}

	code, out, errOut = e.runAs(alice, "approve-call", one.Name, "--reason", "checked the ticket")
	if code != ExitOK || !strings.Contains(out, "mcpcallapproval/"+one.Name+" approved by alice") {
		t.Fatalf("approve-call: exit %d: %s %s", code, out, errOut)
	}
	got := &mcpv1alpha1.McpCallApproval{}
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(one), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Decision != mcpv1alpha1.CallApproved || got.Spec.DecidedBy != "alice" || got.Spec.Reason != "checked the ticket" {
		t.Errorf("recorded %q by %q (%q)", got.Spec.Decision, got.Spec.DecidedBy, got.Spec.Reason)
	}

	// A decision is final, through the command and through the API.
	code, _, errOut = e.runAs(alice, "deny-call", one.Name)
	if code != ExitFailed || !strings.Contains(errOut, "already Approved (by alice)") {
		t.Errorf("deny-call of an approved call: exit %d: %s", code, errOut)
	}

	// Completion offers the calls still waiting, from the API server.
	if _, out, _ := e.runAs(alice, "__complete", "deny-call", ""); !strings.Contains(out, two.Name) || strings.Contains(out, one.Name) {
		t.Errorf("deny-call completes to %q: want %s and not the decided %s", out, two.Name, one.Name)
	}

	code, out, errOut = e.runAs(alice, "deny-call", two.Name, "--reason", "not now", "-o", "name")
	if code != ExitOK || out != "mcpcallapproval.mcp.catalog.dev/"+two.Name+"\n" {
		t.Fatalf("deny-call -o name: exit %d: %q %s", code, out, errOut)
	}

	// Pending only by default; --all shows the decided ones, as JSON too.
	code, out, _ = e.runAs(alice, "approvals")
	if code != ExitOK || strings.Contains(out, one.Name) || strings.Contains(out, two.Name) {
		t.Errorf("decided approvals listed as pending:\n%s", out)
	}
	code, out, _ = e.runAs(alice, "approvals", "--all", "-o", "json")
	var list resultListOf[mcpv1alpha1.McpCallApproval]
	if code != ExitOK || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("approvals --all -o json: exit %d: %s", code, out)
	}
	states := map[string]string{}
	for _, r := range list.Items {
		states[r.Name] = string(r.Spec.Decision) + "/" + r.Spec.DecidedBy
	}
	if states[one.Name] != "Approved/alice" || states[two.Name] != "Denied/alice" {
		t.Errorf("states: %v", states)
	}

	// The caller cannot decide its own call: the command says so, and the
	// API server refuses the same write made without the command.
	three := e.pendingApproval(t, "call", "mallory")
	mallory := e.as(t, "mallory")
	code, _, errOut = e.runAs(mallory, "approve-call", three.Name)
	if code != ExitFailed || !strings.Contains(errOut, "mallory is the caller of this call") {
		t.Errorf("approve-call by the caller: exit %d: %s", code, errOut)
	}
	if err := mallory.Get(ctx, client.ObjectKeyFromObject(three), three); err != nil {
		t.Fatal(err)
	}
	three.Spec.Decision, three.Spec.DecidedBy = mcpv1alpha1.CallApproved, "mallory"
	if err := mallory.Update(ctx, three); err == nil || !strings.Contains(err.Error(), "cannot decide its own approval") {
		t.Errorf("the API server let the caller approve its own call: %v", err)
	}

	// An unknown name fails with exit code 1.
	if code, _, errOut := e.runAs(alice, "approve-call", "nope"); code != ExitFailed || !strings.Contains(errOut, "not found") {
		t.Errorf("approve-call nope: exit %d: %s", code, errOut)
	}

	t.Run("console serves the waiting calls to the browser that opens its link, as the user", func(t *testing.T) {
		five := e.pendingApproval(t, "call", bot)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out, errOut := &capture.Buffer{}, &capture.Buffer{}
		done := make(chan int, 1)
		go func() {
			done <- Run(Streams{In: strings.NewReader(""), Out: out, Err: errOut, Context: ctx,
				NewKubeClient: func() (client.Client, string) { return alice, e.ns }}, []string{"console"})
		}()
		link := regexp.MustCompile(`http://127\.0\.0\.1:\d+/login\?token=\S+`)
		poll.Until(t, 30*time.Second, "the console's link", func() error {
			if link.FindString(out.String()) == "" {
				return fmt.Errorf("output so far:\n%s%s", out.String(), errOut.String())
			}
			return nil
		})
		jar, err := cookiejar.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		browser := &http.Client{Jar: jar}
		resp, err := browser.Get(link.FindString(out.String()))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/" {
			t.Fatalf("the link led to %d %s", resp.StatusCode, resp.Request.URL)
		}
		base := resp.Request.URL.Scheme + "://" + resp.Request.URL.Host
		var view struct {
			User    string `json:"user"`
			Scope   string `json:"scope"`
			Pending []struct {
				Name, Caller string
			} `json:"pending"`
		}
		poll.Until(t, 30*time.Second, "the console's view to show "+five.Name, func() error {
			resp, err := browser.Get(base + "/api/view")
			if err != nil {
				return err
			}
			raw, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && json.Unmarshal(raw, &view) == nil && slices.ContainsFunc(view.Pending, func(p struct{ Name, Caller string }) bool { return p.Name == five.Name }) {
				return nil
			}
			return fmt.Errorf("%d %s", resp.StatusCode, raw)
		})
		if view.User != "alice" || view.Scope != e.ns {
			t.Errorf("the console acts as %q in %q, want alice in %s", view.User, view.Scope, e.ns)
		}
		cancel()
		select {
		case code := <-done:
			if code != ExitOK {
				t.Errorf("console ended with exit %d: %s", code, errOut.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("console did not stop when interrupted")
		}
	})

	t.Run("approvals --watch prints a new waiting call and its decision as they happen", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out, errOut := &capture.Buffer{}, &capture.Buffer{}
		done := make(chan int, 1)
		go func() {
			done <- Run(Streams{In: strings.NewReader(""), Out: out, Err: errOut, Context: ctx,
				NewKubeClient: func() (client.Client, string) { return alice, e.ns }}, []string{"approvals", "--watch"})
		}()
		waitFor := func(what string, ok func(string) bool) {
			t.Helper()
			poll.Until(t, 30*time.Second, "approvals --watch to print "+what, func() error {
				if !ok(out.String()) {
					return fmt.Errorf("output so far:\n%s", out.String())
				}
				return nil
			})
		}
		waitFor("the header", func(s string) bool { return strings.Contains(s, "DECIDED BY") })
		four := e.pendingApproval(t, "call", bot)
		waitFor("the new call", func(s string) bool { return strings.Contains(s, four.Name) })
		if err := decideAs(alice, four, mcpv1alpha1.CallDenied); err != nil {
			t.Fatal(err)
		}
		waitFor("the decision", func(s string) bool {
			for _, l := range strings.Split(s, "\n") {
				if f := strings.Fields(l); len(f) >= 3 && f[1] == four.Name && f[2] == "Denied" && strings.HasSuffix(l, "alice") {
					return true
				}
			}
			return false
		})
		cancel()
		select {
		case code := <-done:
			if code != ExitOK {
				t.Errorf("approvals --watch ended with exit %d:\n%s%s", code, out.String(), errOut.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("approvals --watch did not end when its context did")
		}
		if strings.Contains(out.String(), one.Name) {
			t.Errorf("approvals --watch printed %s, decided before it started:\n%s", one.Name, out.String())
		}
	})
}

// decideAs records a decision on a as c's user would with kubectl.
func decideAs(c client.Client, a *mcpv1alpha1.McpCallApproval, d mcpv1alpha1.CallDecision) error {
	ctx := context.Background()
	user, err := review.WhoAmI(ctx, c)
	if err != nil {
		return err
	}
	return review.DecideCall(ctx, c, client.ObjectKeyFromObject(a), d, user, "")
}
