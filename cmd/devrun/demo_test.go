package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/cli"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/poll"
)

// The demo agent a development run applies can call through the gateway
// as soon as the run starts: RBAC allows it the verb call on the
// namespace's McpTools, an McpAccessPolicy gives it a ceiling, its token is
// one the gateway's TokenReview accepts, and the call-approval admission
// policy the gateway checks for is the one config/policy declares. Applying
// it again (make run restarted) changes nothing and fails nothing.
func TestTheDemoAgentCanCallAsSoonAsTheRunStarts(t *testing.T) {
	cfg := controlplane.Start(t).Config
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	d := demoAgent{
		PolicyFile: filepath.Join("..", "..", "config", "policy", "call_approvals.yaml"),
		AgentFile:  filepath.Join("..", "..", "config", "samples", "demo-agent", "demo_agent.yaml"),
		Namespace:  "default",
		TokenFile:  filepath.Join(t.TempDir(), "demo-agent.token"),
		Audience:   manager.DefaultGatewayAudience,
	}
	var applied appliedDemo
	for range 2 {
		if applied, err = d.apply(ctx, cfg, c); err != nil {
			t.Fatal(err)
		}
	}
	if applied.PolicyName != "call-approvals" || applied.ServiceAccount != "demo-agent" {
		t.Fatalf("applied %+v", applied)
	}
	if until := time.Until(applied.Expires); until < demoTokenLifetime-time.Hour || until > demoTokenLifetime+time.Minute {
		t.Errorf("the token expires in %s, want about %s", until, demoTokenLifetime)
	}

	// The admission policy and a binding that denies: what the gateway
	// checks before it asks a person to approve a call.
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	if err := c.Get(ctx, types.NamespacedName{Name: applied.PolicyName}, &policy); err != nil {
		t.Fatalf("the admission policy: %v", err)
	}
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	if err := c.List(ctx, &bindings); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(bindings.Items, func(b admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
		return b.Spec.PolicyName == applied.PolicyName && slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny)
	}) {
		t.Errorf("no binding denies by %s: %+v", applied.PolicyName, bindings.Items)
	}

	// Its ceiling covers the demo server's class.
	var policies mcpv1alpha1.McpAccessPolicyList
	if err := c.List(ctx, &policies, client.InNamespace(d.Namespace)); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(policies.Items, func(p mcpv1alpha1.McpAccessPolicy) bool {
		return slices.Contains(p.Spec.ServiceAccounts, applied.ServiceAccount) && p.Spec.MaxDataClass.Rank() >= mcpv1alpha1.DataClassInternal.Rank()
	}) {
		t.Errorf("no McpAccessPolicy gives %s a ceiling of Internal: %+v", applied.ServiceAccount, policies.Items)
	}

	// The token: accepted for the gateway's audience, as the agent.
	raw, err := os.ReadFile(d.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(d.TokenFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the token file's mode: %v %v", st, err)
	}
	review, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
		Token: strings.TrimSpace(string(raw)), Audiences: []string{d.Audience},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:" + d.Namespace + ":" + applied.ServiceAccount
	if !review.Status.Authenticated || review.Status.User.Username != user {
		t.Fatalf("the token reviews as %+v, want %s", review.Status, user)
	}

	// RBAC lets it call, as the gateway asks (a review without a name
	// covers every tool of the namespace).
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: review.Status.User.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: d.Namespace, Verb: "call", Group: mcpv1alpha1.GroupVersion.Group, Resource: "mcptools"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sar.Status.Allowed {
		t.Errorf("RBAC does not let the demo agent call: %+v", sar.Status)
	}
	var sa corev1.ServiceAccount
	if err := c.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: applied.ServiceAccount}, &sa); err != nil {
		t.Error(err)
	}
}

// An attack on a development run: the demo agent, even granted the right
// to decide approvals in its namespace, cannot approve its own call,
// because the run applied the call-approval admission policy the chart
// installs. Without it, RBAC alone would let the update through.
func TestTheDemoAgentCannotApproveItsOwnCall(t *testing.T) {
	cfg := controlplane.Start(t).Config
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	d := demoAgent{
		PolicyFile: filepath.Join("..", "..", "config", "policy", "call_approvals.yaml"),
		AgentFile:  filepath.Join("..", "..", "config", "samples", "demo-agent", "demo_agent.yaml"),
		Namespace:  "default",
		TokenFile:  filepath.Join(t.TempDir(), "demo-agent.token"),
		Audience:   manager.DefaultGatewayAudience,
	}
	applied, err := d.apply(ctx, cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:" + d.Namespace + ":" + applied.ServiceAccount
	// The misconfiguration the policy guards against: the agent may
	// decide approvals.
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: "demo-agent-decides"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "call-approver"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: d.Namespace, Name: applied.ServiceAccount}}}
	if err := c.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	approval := func(name string) *mcpv1alpha1.McpCallApproval {
		return &mcpv1alpha1.McpCallApproval{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: name}, Spec: mcpv1alpha1.McpCallApprovalSpec{
			Tool: "demo.echo", LocalName: "mcp_demo_echo", Server: "demo", Caller: user,
			CallerGroups: []string{"system:serviceaccounts"}, DataClass: mcpv1alpha1.DataClassInternal,
			ArgumentsHash: "sha256:" + strings.Repeat("a", 64), DefinitionHash: "sha256:d",
			ExpiresAt: metav1.Time{Time: time.Now().Add(time.Hour).Truncate(time.Second)}, Seal: "seal",
		}}
	}
	// The API server loads a new policy within a moment: wait until it
	// refuses what only the policy refuses (an approval created decided),
	// in a dry run that stores nothing.
	poll.Until(t, 30*time.Second, "the admission policy in force", func() error {
		probe := approval("probe")
		probe.Spec.Decision, probe.Spec.DecidedBy = mcpv1alpha1.CallApproved, "someone"
		if err := c.Create(ctx, probe, client.DryRunAll); err == nil {
			return errors.New("an approval created decided is accepted")
		}
		return nil
	})
	a := approval("call-own")
	if err := c.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	// The agent as the API server sees it: a token of its ServiceAccount
	// for the API server (the one make run writes is for the gateway).
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(d.Namespace).CreateToken(ctx, applied.ServiceAccount, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := client.New(&rest.Config{Host: cfg.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}},
		client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	var own mcpv1alpha1.McpCallApproval
	if err := agent.Get(ctx, client.ObjectKeyFromObject(a), &own); err != nil {
		t.Fatalf("RBAC should let the agent read approvals here: %v", err)
	}
	own.Spec.Decision, own.Spec.DecidedBy = mcpv1alpha1.CallApproved, user
	err = agent.Update(ctx, &own)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "the caller of a call cannot decide its own approval") {
		t.Fatalf("the agent deciding its own call: %v, want the admission policy's refusal", err)
	}
}

// The printed call is one line a POSIX shell splits into the words the
// plugin's call command takes: the gateway's URL, the name agents see, a
// JSON object of arguments, the token file and both opt-ins.
func TestThePrintedCallIsWellFormed(t *testing.T) {
	token := filepath.Join(t.TempDir(), "my dir", "demo-agent.token")
	steps := nextSteps("127.0.0.1:18444", "/home/me/op/.local/kubeconfig", "/home/me/op/bin", token, "default", "demo-agent", time.Now())
	var line string
	for _, l := range strings.Split(steps, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "kubectl mcp call ") {
			line = strings.TrimSpace(l)
		}
	}
	if line == "" {
		t.Fatalf("no call in:\n%s", steps)
	}
	words := shellSplit(t, line)
	want := []string{"kubectl", "mcp", "call", "http://127.0.0.1:18444/mcp", "mcp_demo_echo", "--args", `{"text":"hello"}`,
		"--bearer-file", token, "--allow-credential-over-http", "--allow-private-network"}
	if !slices.Equal(words, want) {
		t.Fatalf("the printed call splits into\n%q\nwant\n%q", words, want)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(words[6]), &args); err != nil || args == nil {
		t.Errorf("--args %q is not a JSON object: %v", words[6], err)
	}
	// The plugin takes it: the command exists and every flag parses.
	root := cli.NewRootCommand(cli.Streams{})
	cmd, rest, err := root.Find(words[2:])
	if err != nil || cmd.Name() != "call" {
		t.Fatalf("the plugin has no command for %q: %v", words[2:], err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("the plugin refuses the flags: %v", err)
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		t.Errorf("the plugin refuses the arguments: %v", err)
	}
	for _, want := range []string{"export KUBECONFIG=/home/me/op/.local/kubeconfig PATH=/home/me/op/bin:\"$PATH\"", "kubectl apply --server-side -n default -k config/samples/", "kubectl mcp approve mcp_demo_echo -n default"} {
		if !strings.Contains(steps, want) {
			t.Errorf("the steps do not say %q:\n%s", want, steps)
		}
	}
}

// shellSplit splits a line as a POSIX shell would, for the quoting
// shellQuote writes: plain words and single-quoted ones with '\”.
func shellSplit(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quoted && ch == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(ch)
		case ch == '\'':
			quoted, inWord = true, true
		case ch == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case ch == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.IndexByte(`"$*?[]{}()<>|&;#~`, ch) >= 0 && !quoted:
			t.Fatalf("unquoted %q in %s", ch, line)
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %s", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
