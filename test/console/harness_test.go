// Package console tests `kubectl mcp console` in a real browser: headless
// Chromium (Debian's package, installed by hack/chromium.sh) driven with
// chromedp, against a real API server (envtest) with the shipped approval
// admission policy, the operator's manager with its gateway, a real MCP
// server (test/mcpserver) and an agent calling through the gateway with the
// go-sdk client. People are envtest users with client certificates, so the
// console acts exactly as their kubeconfig would.
//
// With CONSOLE_SCREENSHOTS set to a directory (relative paths are taken
// from the repository's root), the tests write the screenshots that
// docs/console.md shows.
package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/console"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/notify"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/poll"
	"github.com/mcp-catalog/operator/test/testenv"
)

// waitTime bounds every wait for the cluster, the gateway or the page.
const waitTime = 45 * time.Second

// root is the repository's root, from this package's directory.
var root = filepath.Join("..", "..")

// cluster is the control plane, the operator and one namespace with an MCP
// server and an agent.
type cluster struct {
	env        *envtest.Environment
	cfg        *rest.Config
	admin      client.Client
	clientset  *kubernetes.Clientset
	ns         string
	gatewayURL string
	up         *mcpserver.Server
	agentToken string
	// hook receives the operator's notifications.
	hook *hookReceiver
}

// hookReceiver is the webhook the operator notifies: it keeps every event
// whose signature verifies with the key, and counts the others.
type hookReceiver struct {
	*httptest.Server
	key []byte
	mu  sync.Mutex
	got []notify.Event
	bad int
}

func newHookReceiver(t *testing.T) (*hookReceiver, string) {
	t.Helper()
	h := &hookReceiver{key: []byte(fmt.Sprintf("hook-key-%016x", rand.Uint64()))}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, _ := strconv.ParseInt(r.Header.Get(notify.HeaderTimestamp), 10, 64)
		h.mu.Lock()
		defer h.mu.Unlock()
		var e notify.Event
		if !notify.Verify(h.key, r.Header.Get(notify.HeaderID), ts, body, r.Header.Get(notify.HeaderSignature)) || json.Unmarshal(body, &e) != nil {
			h.bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.got = append(h.got, e)
	}))
	t.Cleanup(h.Close)
	file := filepath.Join(t.TempDir(), "hook-key")
	must(t, os.WriteFile(file, h.key, 0o600))
	return h, file
}

// await waits for an event of type typ about subject.
func (h *hookReceiver) await(t *testing.T, typ, subject string) notify.Event {
	t.Helper()
	var found notify.Event
	eventually(t, "a "+typ+" notification about "+subject, func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.bad > 0 {
			t.Fatalf("%d notifications did not verify", h.bad)
		}
		for _, e := range h.got {
			if e.Type == typ && e.Subject == subject {
				found = e
				return nil
			}
		}
		return fmt.Errorf("%d other notifications", len(h.got))
	})
	return found
}

const serverName = "docs"

func requireTools(t *testing.T) string {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests through `make test`, which builds the control plane and installs Chromium")
	}
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		t.Fatal("CHROMIUM is not set: run the tests through `make test`, which installs Chromium with hack/chromium.sh and passes its path (or set CHROMIUM=$(hack/chromium.sh))")
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("CHROMIUM=%s: %v (hack/chromium.sh installs it)", chromium, err)
	}
	return chromium
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	plane := controlplane.Start(t)
	cfg := plane.Config
	c := &cluster{env: plane.Env, cfg: cfg, admin: plane.Client}
	var err error
	if c.clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	c.installPolicy(t)

	// The gateway seals approvals with a key from a Secret, as every
	// replica of a deployed gateway does.
	ctx := context.Background()
	must(t, c.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gateway-keys"}}))
	must(t, c.admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "gateway-keys", Name: "approval-key"},
		Data: map[string][]byte{"current": []byte(strings.Repeat("k", 32))}}))

	var keyFile string
	c.hook, keyFile = newHookReceiver(t)
	ready := make(chan string, 1)
	opts := testenv.ManagerOptions()
	opts.NotifyWebhookURL, opts.NotifyWebhookKeyFile = c.hook.URL, keyFile
	opts.GatewayAddr, opts.GatewayInsecure, opts.GatewayReady = "127.0.0.1:0", true, ready
	opts.GatewayAudit = io.Discard
	opts.GatewayApprovalKeySecret = "gateway-keys/approval-key"
	testenv.RunManager(t, cfg, opts)
	select {
	case addr := <-ready:
		c.gatewayURL = "http://" + addr + gateway.Path
	case <-time.After(waitTime):
		t.Fatal("the gateway did not start")
	}

	// Each run has a control plane of its own, so the namespace can have
	// the name the screenshots show.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agents"}}
	must(t, c.admin.Create(ctx, ns))
	c.ns = ns.Name

	// The MCP server; every call of its tools needs a person's approval,
	// as the API's default is.
	c.up = mcpserver.Start(t, mcpserver.Options{})
	must(t, c.admin.Create(ctx, &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: serverName}, Spec: mcpv1alpha1.McpServerSpec{
		URL: c.up.URL, DataClass: mcpv1alpha1.DataClassInternal, AllowPrivateNetwork: true,
		OperationTimeout: &metav1.Duration{Duration: 5 * time.Second},
	}}))
	c.agentToken = c.newAgent(t, "bot")
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// installPolicy creates the admission policy and approver role the
// operator ships, and waits until the API server enforces the policy.
func (c *cluster) installPolicy(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "config", "policy", "call_approvals.yaml"))
	must(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		if len(u.Object) > 0 {
			must(t, c.admin.Create(context.Background(), u))
		}
	}
	must(t, c.admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "policy-probe"}}))
	eventually(t, "the approval admission policy is enforced", func() error {
		a := &mcpv1alpha1.McpCallApproval{ObjectMeta: metav1.ObjectMeta{Namespace: "policy-probe", GenerateName: "probe-"}, Spec: mcpv1alpha1.McpCallApprovalSpec{
			Tool: "x", LocalName: "x", Server: "x", Caller: "someone", DataClass: mcpv1alpha1.DataClassInternal,
			ArgumentsHash: "sha256:" + strings.Repeat("0", 64), DefinitionHash: "x", ExpiresAt: metav1.NewTime(time.Now().Add(time.Hour)), Seal: "x",
			Decision: mcpv1alpha1.CallApproved, DecidedBy: "not-the-writer",
		}}
		if err := c.admin.Create(context.Background(), a); err == nil {
			_ = c.admin.Delete(context.Background(), a)
			return errors.New("an approval created decided was accepted")
		}
		return nil
	})
}

// eventually waits until f succeeds, for at most waitTime.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	poll.Until(t, waitTime, what, f)
}

// newAgent creates a ServiceAccount allowed to call every McpTool of the
// namespace up to Internal, with approval by a person, and returns a token
// for the gateway's audience.
func (c *cluster) newAgent(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	must(t, c.admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name}}))
	must(t, c.admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name + "-call"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcptools"}, Verbs: []string{authz.VerbCall}}}}))
	must(t, c.admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name + "-call"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name + "-call"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: c.ns, Name: name}}}))
	must(t, c.admin.Create(ctx, &mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name},
		Spec: mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{name}, MaxDataClass: mcpv1alpha1.DataClassInternal}}))
	tr, err := c.clientset.CoreV1().ServiceAccounts(c.ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{manager.DefaultGatewayAudience}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	must(t, err)
	user := "system:serviceaccount:" + c.ns + ":" + name
	eventually(t, "the agent's token and RBAC", func() error {
		rev := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token, Audiences: []string{manager.DefaultGatewayAudience}}}
		if err := c.admin.Create(ctx, rev); err != nil || !rev.Status.Authenticated {
			return fmt.Errorf("token not authenticated yet: %w", err)
		}
		return c.allowed(user, "mcptools", authz.VerbCall)
	})
	return tr.Status.Token
}

// allowed says whether user may verb resource in the namespace.
func (c *cluster) allowed(user, resource, verb string) error {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.ns, Verb: verb, Group: mcpv1alpha1.GroupVersion.Group, Resource: resource}}}
	if err := c.admin.Create(context.Background(), sar); err != nil {
		return err
	}
	if !sar.Status.Allowed {
		return fmt.Errorf("%s may not %s %s yet", user, verb, resource)
	}
	return nil
}

// person is a user with a client certificate of the control plane, and
// the client their kubeconfig would give.
func (c *cluster) person(t *testing.T, name string, rules ...rbacv1.PolicyRule) client.WithWatch {
	t.Helper()
	u, err := c.env.AddUser(envtest.User{Name: name, Groups: []string{"system:authenticated"}}, nil)
	must(t, err)
	ctx := context.Background()
	if len(rules) > 0 {
		must(t, c.admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name}, Rules: rules}))
		must(t, c.admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}}}))
		eventually(t, name+"'s RBAC", func() error { return c.allowed(name, rules[0].Resources[0], rules[0].Verbs[0]) })
	}
	wc, err := client.NewWithWatch(u.Config(), client.Options{Scheme: scheme.New()})
	must(t, err)
	return wc
}

// approver may decide calls (the shipped call-approver ClusterRole) and
// review and enable tools, prompts and resources.
func (c *cluster) approver(t *testing.T, name string) client.WithWatch {
	t.Helper()
	wc := c.person(t, name, rbacv1.PolicyRule{APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcptools", "mcpprompts", "mcpresources"}, Verbs: []string{"patch", "get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcpservers"}, Verbs: []string{"get", "list", "watch"}})
	must(t, c.admin.Create(context.Background(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name + "-approver"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "call-approver"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}}}))
	eventually(t, name+" may decide calls", func() error { return c.allowed(name, "mcpcallapprovals", "update") })
	return wc
}

// startConsole runs a console for the user of wc in the namespace, as
// `kubectl mcp console -n NS` does, until the test ends.
func (c *cluster) startConsole(t *testing.T, wc client.WithWatch) *console.Console {
	t.Helper()
	con, err := console.Listen(console.Options{Client: wc, Namespace: c.ns})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- con.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the console ended with %v", err)
		}
	})
	return con
}

// tool reads an McpTool.
func (c *cluster) tool(t *testing.T, remote string) *mcpv1alpha1.McpTool {
	t.Helper()
	tl := &mcpv1alpha1.McpTool{}
	must(t, c.admin.Get(context.Background(), types.NamespacedName{Namespace: c.ns, Name: object(remote)}, tl))
	return tl
}

func object(remote string) string {
	n, _ := toolname.ObjectName(serverName, remote)
	return n
}

func local(remote string) string { return toolname.LocalName(serverName, remote) }

// reimport asks the operator to import the server's catalog now and waits
// until the tool's definition is no longer old.
func (c *cluster) reimport(t *testing.T, remote, old string) *mcpv1alpha1.McpTool {
	t.Helper()
	srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: serverName}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, mcpv1alpha1.AnnotationRequestedImportAt, time.Now().Format(time.RFC3339Nano))
	must(t, c.admin.Patch(context.Background(), srv, client.RawPatch(types.MergePatchType, []byte(patch))))
	var tl *mcpv1alpha1.McpTool
	eventually(t, remote+"'s new definition imported", func() error {
		tl = c.tool(t, remote)
		if tl.Status.DefinitionHash == old {
			return errors.New("not yet")
		}
		return nil
	})
	return tl
}

// setEnabled changes a tool's spec.enabled as someone else would, with
// kubectl.
func (c *cluster) setEnabled(t *testing.T, remote string, on bool) {
	t.Helper()
	tl := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: object(remote)}}
	must(t, c.admin.Patch(context.Background(), tl, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"enabled":%t}}`, on)))))
}

// approvals are the namespace's McpCallApprovals.
func (c *cluster) approvals(t *testing.T) []mcpv1alpha1.McpCallApproval {
	t.Helper()
	var list mcpv1alpha1.McpCallApprovalList
	must(t, c.admin.List(context.Background(), &list, client.InNamespace(c.ns)))
	return list.Items
}

// pendingApproval waits for an undecided approval not among known.
func (c *cluster) pendingApproval(t *testing.T, known ...string) mcpv1alpha1.McpCallApproval {
	t.Helper()
	var found mcpv1alpha1.McpCallApproval
	eventually(t, "a new call approval", func() error {
		for _, a := range c.approvals(t) {
			if a.Spec.Decision == mcpv1alpha1.CallPending && !contains(known, a.Name) {
				found = a
				return nil
			}
		}
		return errors.New("none yet")
	})
	return found
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// agent is an MCP session of the agent with the gateway.
type agent struct {
	cs *sdk.ClientSession
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens a session as the agent, with a client that declares no
// elicitation: it is told to wait in the tool result and retries. It
// listens for tool list changes, as a client that keeps its list for the
// list's ttlMs must to see a change sooner: told, it drops the list.
func (c *cluster) connect(t *testing.T) *agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTime)
	defer cancel()
	cl := sdk.NewClient(&sdk.Implementation{Name: "console-test-agent", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {},
	})
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: c.gatewayURL,
		HTTPClient: &http.Client{Transport: bearer{token: c.agentToken, next: http.DefaultTransport}}}, nil)
	must(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return &agent{cs: cs}
}

// call calls a tool and returns isError and the text.
func (a *agent) call(t *testing.T, name string, args map[string]any) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTime)
	defer cancel()
	res, err := a.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	must(t, err)
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return res.IsError, b.String()
}

// served returns the description the gateway offers for a tool, and
// whether it offers it at all.
func (a *agent) served(t *testing.T, name string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTime)
	defer cancel()
	for tl, err := range a.cs.Tools(ctx, nil) {
		must(t, err)
		if tl.Name == name {
			return tl.Description, true
		}
	}
	return "", false
}

// browser is headless Chromium, with a closed network: it reaches only
// this machine, and rebind.test resolves to the loopback address, as a
// DNS-rebinding attacker's name would.
type browser struct {
	ctx context.Context
}

func startBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// The first action starts the browser.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("starting Chromium (%s): %v", chromium, err)
	}
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return &browser{ctx: ctx}
}

// tab opens a new tab of the browser (cookies are the browser's).
func (b *browser) tab(t *testing.T) *page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	// The first action opens the tab, which lives as long as the context
	// of that action: this one, without a deadline.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return &page{ctx: ctx}
}

// page is one tab.
type page struct {
	ctx context.Context
}

func (p *page) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTime)
	defer cancel()
	for _, a := range actions {
		for {
			err := chromedp.Do(ctx, a)
			if err == nil {
				break
			}
			// The console re-renders on every watch event: a node found
			// just before a re-render is gone when the click or the keys
			// reach it, before anything was done to it. A person would
			// try again on the new node; so does the test.
			if staleNode(err) && ctx.Err() == nil {
				continue
			}
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// staleNode reports whether err is the browser saying a node the action
// had found is no longer in the page.
func staleNode(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Could not find node with given id") || strings.Contains(msg, "No node with given id found")
}

// get runs one action that returns a value.
func get[T any](t *testing.T, p *page, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTime)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// open opens a console's one-time link and waits for its first view.
func (p *page) open(t *testing.T, con *console.Console) {
	t.Helper()
	p.run(t, "opening the console", chromedp.Navigate(con.URL()))
	p.waitJS(t, "the console's first view", `document.body.getAttribute('data-renders') !== null`)
}

// waitJS waits until a JavaScript expression is true in the page.
func (p *page) waitJS(t *testing.T, what, expr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTime)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(waitTime), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		// Say what the page shows instead.
		dctx, dcancel := context.WithTimeout(p.ctx, 5*time.Second)
		defer dcancel()
		shown, _ := chromedp.Run(dctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
		t.Fatalf("waiting for %s: %v; the page shows:\n%s", what, err, shown)
	}
}

// expand opens a folded review card, as a person clicking its summary.
func (p *page) expand(t *testing.T, card string) {
	t.Helper()
	// Its summary is clicked again while it stays closed: the live page
	// may draw the card anew between a click and the check, and a click
	// on the card it replaced opens nothing.
	p.waitJS(t, card+" open", `(() => {
		const d = document.querySelector(`+js(card)+`);
		if (d === null) return false;
		if (!d.open) d.querySelector(':scope > summary').click();
		return d.open;
	})()`)
}

// text is the text of the first element a selector finds.
func (p *page) text(t *testing.T, sel string) string {
	t.Helper()
	return get(t, p, "reading "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// eval evaluates a JavaScript expression.
func eval[T any](t *testing.T, p *page, expr string) T {
	t.Helper()
	return get(t, p, "evaluating "+expr, chromedp.Evaluate[T](expr))
}

var screenshots sync.Mutex

// screenshot writes the page as docs shows it, when CONSOLE_SCREENSHOTS
// names a directory.
func (p *page) screenshot(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	screenshots.Lock()
	defer screenshots.Unlock()
	png := get(t, p, "taking a screenshot", chromedp.FullScreenshot(100))
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "console-"+name+".png"), png, 0o644))
}

// js quotes s as a JavaScript string literal.
func js(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\'', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
