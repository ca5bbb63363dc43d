package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/testenv"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// newNamespace creates a namespace for the current spec and deletes its
// McpServers and McpTools when the spec ends (envtest runs no namespace or
// garbage collector controller), so the manager's caches stay small.
func newNamespace() string {
	return testenv.Namespace(k8sClient, "g", func(ctx context.Context, ns string) {
		Expect(k8sClient.DeleteAllOf(ctx, &mcpv1alpha1.McpServer{}, client.InNamespace(ns))).To(Succeed())
		Expect(k8sClient.DeleteAllOf(ctx, &mcpv1alpha1.McpTool{}, client.InNamespace(ns))).To(Succeed())
	})
}

// secretsUsed holds every upstream credential the suite hands out, for the
// leak check.
var secretsUsed testenv.Secrets

// newSecretValue returns a fresh credential value, registered in
// secretsUsed.
func newSecretValue() string { return secretsUsed.New("uPsTrEaM", "SeCrEt") }

// upstream is a real MCP server behind an McpServer of the spec's
// namespace.
type upstream struct {
	*mcpserver.Server
	ns, name string
	secret   string
}

// serverOpt adjusts an McpServer spec before it is created.
type serverOpt func(*mcpv1alpha1.McpServerSpec)

func withDataClass(c mcpv1alpha1.DataClass) serverOpt {
	return func(s *mcpv1alpha1.McpServerSpec) { s.DataClass = c }
}

// withApproval leaves approval required, as the API's default is; the
// suite's servers otherwise turn it off explicitly.
func withApproval() serverOpt {
	return func(s *mcpv1alpha1.McpServerSpec) { s.ApprovalRequired = nil }
}

// newUpstream starts a go-sdk MCP server that requires a bearer token,
// stores the token in a Secret, declares an McpServer for it (Internal,
// approval off unless an option says otherwise) and enables the named
// remote tools, waiting until each is Ready.
func newUpstream(ns, name string, mcpOpts mcpserver.Options, enable []string, opts ...serverOpt) *upstream {
	GinkgoHelper()
	secret := newSecretValue()
	mcpOpts.RequireBearer = secret
	srv := mcpserver.Start(GinkgoT(), mcpOpts)
	Expect(k8sClient.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-token", Labels: map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}},
		Data:       map[string][]byte{"token": []byte(secret)},
	})).To(Succeed())
	opts = append([]serverOpt{func(s *mcpv1alpha1.McpServerSpec) {
		s.AllowCredentialOverHTTP = true
		s.Auth = &mcpv1alpha1.McpServerAuth{Bearer: &mcpv1alpha1.BearerAuth{
			SecretRef: mcpv1alpha1.SecretKeySelector{Name: name + "-token", Key: "token"},
		}}
	}}, opts...)
	up := declare(ns, name, srv.URL, enable, opts...)
	up.Server, up.secret = srv, secret
	return up
}

// declare creates an McpServer for url and enables the named remote tools.
func declare(ns, name, url string, enable []string, opts ...serverOpt) *upstream {
	GinkgoHelper()
	spec := mcpv1alpha1.McpServerSpec{
		URL:              url,
		DataClass:        mcpv1alpha1.DataClassInternal,
		ApprovalRequired: ptr.To(false),
		OperationTimeout: &metav1.Duration{Duration: 5 * time.Second},
		// No probe during a spec unless the spec asks for one: a probe
		// between two counter readings would look like a leaked call.
		HealthCheck: mcpv1alpha1.HealthCheckSettings{Interval: &metav1.Duration{Duration: time.Hour}},
	}
	for _, o := range opts {
		o(&spec)
	}
	Expect(k8sClient.Create(context.Background(), &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})).To(Succeed())
	up := &upstream{ns: ns, name: name}
	for _, remote := range enable {
		up.enable(remote)
	}
	return up
}

// object is the McpTool name of a remote tool.
func (u *upstream) object(remote string) string {
	n, err := toolname.ObjectName(u.name, remote)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// local is the name agents see.
func (u *upstream) local(remote string) string { return toolname.LocalName(u.name, remote) }

// enable waits for the import to create the tool, enables it, approves the
// definition the import wrote and waits until it is Ready.
func (u *upstream) enable(remote string) {
	GinkgoHelper()
	key := types.NamespacedName{Namespace: u.ns, Name: u.object(remote)}
	Eventually(func(g Gomega) {
		t := &mcpv1alpha1.McpTool{}
		g.Expect(k8sClient.Get(context.Background(), key, t)).To(Succeed())
		g.Expect(t.Status.DefinitionHash).NotTo(BeEmpty(), "imported")
		patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
		t.Spec.Enabled = true
		t.Spec.ApprovedDefinitionHash = t.Status.DefinitionHash
		g.Expect(k8sClient.Patch(context.Background(), t, patch)).To(Succeed())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	u.waitTool(remote, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
}

// setEnabled changes spec.enabled of an existing tool.
func (u *upstream) setEnabled(remote string, on bool) {
	GinkgoHelper()
	t := u.tool(remote)
	patch := client.MergeFrom(t.DeepCopy())
	t.Spec.Enabled = on
	Expect(k8sClient.Patch(context.Background(), t, patch)).To(Succeed())
}

func (u *upstream) tool(remote string) *mcpv1alpha1.McpTool {
	GinkgoHelper()
	t := &mcpv1alpha1.McpTool{}
	Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: u.ns, Name: u.object(remote)}, t)).To(Succeed())
	return t
}

// waitTool waits until the gateway's view of the tool (the manager's
// cache) shows the Ready condition for the current generation.
func (u *upstream) waitTool(remote string, status metav1.ConditionStatus, reason string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		t := &mcpv1alpha1.McpTool{}
		g.Expect(cached.Get(context.Background(), types.NamespacedName{Namespace: u.ns, Name: u.object(remote)}, t)).To(Succeed())
		c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(t.Generation))
		g.Expect([]string{string(c.Status), c.Reason}).To(Equal([]string{string(status), reason}))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// annotate sets an annotation on the McpServer and waits until status
// shows it was handled.
func (u *upstream) request(annotation string) {
	GinkgoHelper()
	v := time.Now().Format(time.RFC3339Nano)
	srv := &mcpv1alpha1.McpServer{}
	Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: u.ns, Name: u.name}, srv)).To(Succeed())
	patch := client.MergeFrom(srv.DeepCopy())
	if srv.Annotations == nil {
		srv.Annotations = map[string]string{}
	}
	srv.Annotations[annotation] = v
	Expect(k8sClient.Patch(context.Background(), srv, patch)).To(Succeed())
	Eventually(func(g Gomega) string {
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: u.ns, Name: u.name}, srv)).To(Succeed())
		if annotation == mcpv1alpha1.AnnotationRequestedImportAt {
			return srv.Status.LastHandledImportAt
		}
		return srv.Status.LastHandledProbeAt
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(v))
}

// tokensUsed holds every agent token, for the leak check.
var tokensUsed testenv.Secrets

// agent is a ServiceAccount that calls the gateway.
type agent struct {
	ns, name string
	token    string
}

// newAgent creates a ServiceAccount and a token for it bound to the
// gateway's audience, through the TokenRequest API as the kubelet does for
// a projected token.
func newAgent(ns, name string) *agent {
	GinkgoHelper()
	ctx := context.Background()
	Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	a := &agent{ns: ns, name: name, token: tokenFor(ns, name, manager.DefaultGatewayAudience)}
	// The API server's token authenticator may not know a brand-new
	// ServiceAccount for a moment, and the gateway caches a refusal for 30
	// seconds: wait until a review accepts the token.
	Eventually(func(g Gomega) bool {
		tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: a.token, Audiences: []string{manager.DefaultGatewayAudience}}}
		g.Expect(k8sClient.Create(ctx, tr)).To(Succeed())
		return tr.Status.Authenticated
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	return a
}

func tokenFor(ns, name, audience string) string {
	GinkgoHelper()
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(tr.Status.Token).NotTo(BeEmpty())
	tokensUsed.Add(tr.Status.Token)
	return tr.Status.Token
}

// grant lets the agent call the named McpTools (objects), or every McpTool
// of the namespace when none is named, with a Role allowing verb "call".
func (a *agent) grant(objects ...string) {
	GinkgoHelper()
	ctx := context.Background()
	name := fmt.Sprintf("%s-call-%08x", a.name, rand.Uint32())
	Expect(k8sClient.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: name},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcptools"},
			Verbs: []string{authz.VerbCall}, ResourceNames: objects,
		}},
	})).To(Succeed())
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: a.ns, Name: a.name}},
	})).To(Succeed())
	// The API server's authorizer learns of the binding from its own
	// cache, and the gateway caches an answer for 30 seconds: wait until a
	// review allows what was granted.
	object := "any"
	if len(objects) > 0 {
		object = objects[0]
	}
	Eventually(func(g Gomega) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + a.ns + ":" + a.name,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: a.ns, Verb: authz.VerbCall, Group: mcpv1alpha1.GroupVersion.Group, Resource: "mcptools", Name: object,
			},
		}}
		g.Expect(k8sClient.Create(ctx, sar)).To(Succeed())
		return sar.Status.Allowed
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
}

// allowInternal lets the agent call every McpTool of its namespace up to
// the Internal data class: the usual agent of a spec.
func (a *agent) allowInternal() *agent {
	GinkgoHelper()
	a.grant()
	a.ceiling(mcpv1alpha1.DataClassInternal)
	return a
}

// ceiling declares an McpAccessPolicy naming the agent, with the approval
// mode given (the API's default, Person, when none is).
func (a *agent) ceiling(class mcpv1alpha1.DataClass, mode ...mcpv1alpha1.ApprovalMode) {
	GinkgoHelper()
	p := &mcpv1alpha1.McpAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: fmt.Sprintf("%s-%08x", a.name, rand.Uint32())},
		Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{a.name}, MaxDataClass: class},
	}
	if len(mode) > 0 {
		p.Spec.ApprovalMode = mode[0]
	}
	Expect(k8sClient.Create(context.Background(), p)).To(Succeed())
	// The gateway reads policies from the manager's cache.
	Eventually(func() error {
		return cached.Get(context.Background(), client.ObjectKeyFromObject(p), &mcpv1alpha1.McpAccessPolicy{})
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
}

// bearer adds the agent's token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// httpClient is an HTTP client that presents token.
func httpClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
}

// connect opens an MCP session to the gateway as the agent, with the
// go-sdk client, in the protocol revision version.
func (a *agent) connect(copts *sdk.ClientOptions, version string) *sdk.ClientSession {
	GinkgoHelper()
	cs, err := dial(a.token, copts, version)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cs.Close)
	// The SDK client falls back to an older revision silently; a spec about
	// one era must run in it.
	Expect(cs.InitializeResult().ProtocolVersion).To(Equal(version))
	return cs
}

func dial(token string, copts *sdk.ClientOptions, version string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gatewayURL, HTTPClient: httpClient(token)}, &sdk.ClientSessionOptions{ProtocolVersion: version})
}

// toolNames lists what the session is offered.
func toolNames(cs *sdk.ClientSession) []string {
	GinkgoHelper()
	var names []string
	for t, err := range cs.Tools(context.Background(), nil) {
		Expect(err).NotTo(HaveOccurred())
		names = append(names, t.Name)
	}
	return names
}

// call calls a tool and returns the result's isError and its text.
func call(cs *sdk.ClientSession, name string, args map[string]any) (bool, string) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	Expect(err).NotTo(HaveOccurred())
	return res.IsError, text(res)
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// auditRecord is an audit line decoded.
type auditRecord = audit.Record

// auditFor returns the audit records about one McpTool, in order.
func auditFor(ns, object string) []auditRecord {
	GinkgoHelper()
	var out []auditRecord
	for _, l := range auditLog.all() {
		var r auditRecord
		Expect(json.Unmarshal([]byte(l), &r)).To(Succeed(), "every audit line is one JSON object: %s", l)
		if r.Namespace == ns && r.Tool == object {
			out = append(out, r)
		}
	}
	return out
}

// Protocol revisions the agent's client asks for: the initialize era
// (served on a session, approval asked on it) and the stateless revision
// (approval through an input-required result with signed state).
const (
	legacyEra = "2025-11-25"
	modernEra = "2026-07-28"
)

// postInitialize sends an initialize request by hand, presenting token
// (none when empty), and returns the response.
func postInitialize(token string) *http.Response {
	GinkgoHelper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyEra + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	return post(token, "", body)
}

func post(token, session, body string) *http.Response {
	GinkgoHelper()
	req, err := http.NewRequest(http.MethodPost, gatewayURL, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", legacyEra)
	}
	resp, err := httpClient(token).Do(req)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(resp.Body.Close)
	return resp
}

// approver answers the gateway's approval question as a client's human
// would, and counts the questions.
type approver struct {
	mu        sync.Mutex
	questions []string
	action    string
	approve   bool
}

func (a *approver) handle(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.questions = append(a.questions, req.Params.Message)
	if a.action != "accept" {
		return &sdk.ElicitResult{Action: a.action}, nil
	}
	return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": a.approve}}, nil
}

func (a *approver) asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.questions...)
}

// startEverything starts the TypeScript reference server, stopped when the
// spec ends.
func startEverything(ctx context.Context) *tsagent.Everything {
	GinkgoHelper()
	srv, err := tsagent.StartEverything(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Stop)
	return srv
}
