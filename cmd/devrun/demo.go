package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// fieldOwner is the field manager of what devrun applies.
const fieldOwner = "mcp-catalog-devrun"

// demoTokenLifetime is how long the demo agent's token is valid; the run
// writes a new one when half of it has passed.
const demoTokenLifetime = 24 * time.Hour

// demoCall is the tool the printed call calls, and its arguments.
var demoCall = struct{ server, tool, args string }{"demo", "echo", `{"text":"hello"}`}

// demoAgent is what a development run applies besides the CRDs so that a
// first call through its gateway needs nothing assembled: the call-approval
// admission policy, exactly as config/policy (and the chart) installs it,
// and the demo agent of config/samples/demo-agent, with a token of its
// ServiceAccount for the gateway's audience written to a file.
type demoAgent struct {
	// PolicyFile is the call-approval admission policy's manifest.
	PolicyFile string
	// AgentFile is the demo agent's manifest: one ServiceAccount, and the
	// Role, RoleBinding and McpAccessPolicy that let it call.
	AgentFile string
	// Namespace is where the demo agent is applied.
	Namespace string
	// TokenFile is where the ServiceAccount's token is written.
	TokenFile string
	// Audience is the gateway's audience.
	Audience string
}

// appliedDemo is what applying the demo agent left in the cluster.
type appliedDemo struct {
	// PolicyName is the ValidatingAdmissionPolicy the gateway checks is
	// in force before it asks a person to approve a call.
	PolicyName string
	// ServiceAccount is the demo agent's ServiceAccount name.
	ServiceAccount string
	// AccessPolicy is the demo agent's McpAccessPolicy, whose first status
	// says the controllers run.
	AccessPolicy string
	// Expires is when the token in TokenFile expires.
	Expires time.Time
}

// apply applies the policy and the agent with server-side apply and
// writes the agent's token.
func (d demoAgent) apply(ctx context.Context, cfg *rest.Config, c client.Client) (appliedDemo, error) {
	var out appliedDemo
	policy, err := readObjects(d.PolicyFile)
	if err != nil {
		return out, err
	}
	agent, err := readObjects(d.AgentFile)
	if err != nil {
		return out, err
	}
	for _, o := range policy {
		if o.GetKind() == "ValidatingAdmissionPolicy" {
			out.PolicyName = o.GetName()
		}
	}
	if out.PolicyName == "" {
		return out, fmt.Errorf("%s holds no ValidatingAdmissionPolicy", d.PolicyFile)
	}
	for _, o := range agent {
		if o.GetKind() == "McpAccessPolicy" {
			out.AccessPolicy = o.GetName()
		}
		if o.GetKind() == "ServiceAccount" {
			if out.ServiceAccount != "" {
				return out, fmt.Errorf("%s holds more than one ServiceAccount", d.AgentFile)
			}
			out.ServiceAccount = o.GetName()
		}
		o.SetNamespace(d.Namespace)
	}
	if out.ServiceAccount == "" {
		return out, fmt.Errorf("%s holds no ServiceAccount", d.AgentFile)
	}
	for _, o := range append(policy, agent...) {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return out, fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return out, fmt.Errorf("connecting for the demo agent's token: %w", err)
	}
	out.Expires, err = d.writeToken(ctx, cs, out.ServiceAccount)
	return out, err
}

// writeToken requests a token of the ServiceAccount for the gateway's
// audience and writes it, readable by its owner only, to TokenFile.
func (d demoAgent) writeToken(ctx context.Context, cs kubernetes.Interface, sa string) (time.Time, error) {
	tr, err := cs.CoreV1().ServiceAccounts(d.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{d.Audience}, ExpirationSeconds: ptr.To(int64(demoTokenLifetime / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("requesting a token of ServiceAccount %s/%s for the audience %s: %w", d.Namespace, sa, d.Audience, err)
	}
	if err := os.MkdirAll(filepath.Dir(d.TokenFile), 0o700); err != nil {
		return time.Time{}, fmt.Errorf("creating %s: %w", filepath.Dir(d.TokenFile), err)
	}
	// Written beside and renamed, so a call reading the file never sees
	// half a token.
	tmp := d.TokenFile + ".new"
	if err := os.WriteFile(tmp, []byte(tr.Status.Token+"\n"), 0o600); err != nil {
		return time.Time{}, fmt.Errorf("writing the demo agent's token: %w", err)
	}
	if err := os.Rename(tmp, d.TokenFile); err != nil {
		return time.Time{}, fmt.Errorf("writing the demo agent's token: %w", err)
	}
	return tr.Status.ExpirationTimestamp.Time, nil
}

// renewToken writes a new token each time half of the last one's lifetime
// has passed, until ctx ends.
func (d demoAgent) renewToken(ctx context.Context, cfg *rest.Config, sa string, expires time.Time) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return
	}
	for {
		wait := time.Until(expires) / 2
		if wait < time.Minute {
			wait = time.Minute
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		next, err := d.writeToken(ctx, cs, sa)
		if err != nil {
			if ctx.Err() == nil {
				say("renewing the demo agent's token: %v", err)
			}
			continue
		}
		expires = next
	}
}

// controllersRunning returns once the controllers reconciled the demo
// agent's McpAccessPolicy (its Ready condition is set), or after a
// minute: the steps printed then are not buried under the controllers'
// start-up lines.
func controllersRunning(ctx context.Context, c client.Client, ns, policy string) {
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var p mcpv1alpha1.McpAccessPolicy
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: policy}, &p); err != nil {
			return false, nil
		}
		return meta.FindStatusCondition(p.Status.Conditions, mcpv1alpha1.ConditionReady) != nil, nil
	})
}

// readObjects decodes a multi-document YAML manifest.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s (run make run from the repository root): %w", path, err)
	}
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(m) == 0 {
			continue
		}
		o := &unstructured.Unstructured{Object: m}
		if o.GetAPIVersion() == "" || o.GetKind() == "" {
			return nil, fmt.Errorf("%s: a document without apiVersion or kind", path)
		}
		objs = append(objs, o)
	}
}

// nextSteps is what a development run prints once its gateway serves: the
// commands, in order, that take a new user from nothing to a first call
// through the gateway, as the demo agent. kubeconfig is "" for a cluster
// of the user's own; pluginDir is where kubectl-mcp was built, "" when it
// was not.
func nextSteps(gatewayAddr, kubeconfig, pluginDir, tokenFile, namespace, sa string, expires time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, ">> a first governed call, as the demo agent (ServiceAccount %s/%s: RBAC lets it call, its ceiling is Internal):\n", namespace, sa)
	var env []string
	if kubeconfig != "" {
		env = append(env, "KUBECONFIG="+shellQuote(kubeconfig))
	}
	if pluginDir != "" {
		env = append(env, "PATH="+shellQuote(pluginDir)+`:"$PATH"`)
	}
	if len(env) > 0 {
		fmt.Fprintf(&b, "     export %s\n", strings.Join(env, " "))
	}
	if pluginDir == "" {
		b.WriteString("     make build                        # kubectl-mcp, the kubectl plugin, into bin/: put it on PATH\n")
	}
	fmt.Fprintf(&b, "     kubectl apply --server-side -n %s -k config/samples/   # the demo McpServer first, then one of each kind\n", namespace)
	local := toolname.LocalName(demoCall.server, demoCall.tool)
	fmt.Fprintf(&b, "     kubectl mcp approve %s -n %s   # shows its definition and the --hash that approves it\n", local, namespace)
	fmt.Fprintf(&b, "     %s\n", strings.Join(callCommand(gatewayAddr, tokenFile), " "))
	fmt.Fprintf(&b, ">> the call waits for a person: approve it with the command it prints (or see kubectl mcp approvals), then run the same call again.\n")
	fmt.Fprintf(&b, ">> the token in %s is valid until %s; this run renews it.\n", tokenFile, expires.UTC().Format(time.RFC3339))
	return b.String()
}

// callCommand is the printed call through the development gateway, each
// word quoted for a POSIX shell where it needs to be. The gateway is plain
// HTTP on loopback, so the two opt-ins it needs are on the line.
func callCommand(gatewayAddr, tokenFile string) []string {
	words := []string{"kubectl", "mcp", "call", "http://" + gatewayAddr + "/mcp", toolname.LocalName(demoCall.server, demoCall.tool),
		"--args", demoCall.args, "--bearer-file", tokenFile, "--allow-credential-over-http", "--allow-private-network"}
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return words
}

// shellQuote quotes a word for a POSIX shell unless it is plain.
func shellQuote(w string) string {
	plain := w != ""
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			plain = false
			break
		}
	}
	if plain {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
