package controller_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// secretURLServer is a provider whose URL is the credential: it serves a
// real MCP server only on a secret path segment with a secret query
// parameter, and answers 401 to anything else.
type secretURLServer struct {
	*httptest.Server
	up        *mcpserver.Server
	pathToken string
	keyToken  string

	mu       sync.Mutex
	served   int
	rejected int
	refuse   bool
}

func startSecretURLServer() *secretURLServer {
	s := &secretURLServer{pathToken: newToken(), keyToken: newToken()}
	s.up = startMCP(mcpserver.Options{Flavor: mcpserver.GoSDK, Stateless: true, Tools: 2})
	inner := s.up.Handler()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		ok := !s.refuse && r.URL.Path == "/"+s.pathToken+"/mcp" && r.URL.Query().Get("key") == s.keyToken
		if ok {
			s.served++
		} else {
			s.rejected++
		}
		s.mu.Unlock()
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawQuery, r2.RequestURI = mcpserver.Path, "", ""
		inner.ServeHTTP(w, r2)
	}))
	DeferCleanup(s.Close)
	return s
}

// secretURL is the full URL, which only the Secret holds.
func (s *secretURLServer) secretURL() string {
	return s.URL + "/" + s.pathToken + "/mcp?key=" + s.keyToken
}

func (s *secretURLServer) counts() (served, rejected int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served, s.rejected
}

func (s *secretURLServer) total() int {
	a, b := s.counts()
	return a + b
}

func putURLSecret(ns, name, value string, optIn bool) {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"url": []byte(value)}}
	if optIn {
		sec.Labels = map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}
	}
	Expect(k8sClient.Create(context.Background(), sec)).To(Succeed())
}

func withURLFrom(secret string) func(*mcpv1alpha1.McpServerSpec) {
	return func(s *mcpv1alpha1.McpServerSpec) {
		s.URL = ""
		s.URLFrom = &mcpv1alpha1.URLSource{SecretRef: mcpv1alpha1.SecretKeySelector{Name: secret, Key: "url"}}
	}
}

var _ = Describe("A URL read from a Secret", func() {
	It("reaches the server, and its secret parts never appear in status, events or logs", func() {
		ns := newNamespace()
		p := startSecretURLServer()
		putURLSecret(ns, "provider-url", p.secretURL(), true)
		createServer(ns, "provider", "", withURLFrom("provider-url"), func(s *mcpv1alpha1.McpServerSpec) {
			s.AllowCredentialOverHTTP = true // the test server speaks plain http
		})
		srv := waitReady(ns, "provider", 30*time.Second)
		Expect(srv.Status.Conditions).To(haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
		Expect(srv.Status.Tools.Imported).To(BeNumerically(">=", 2), "the catalog was imported through the secret URL")
		served, rejected := p.counts()
		Expect(served).To(BeNumerically(">", 0), "the scenario really used the secret URL")
		Expect(rejected).To(BeZero())

		// Failure paths produce conditions, events and log lines.
		p.mu.Lock()
		p.refuse = true
		p.mu.Unlock()
		v := requestImport(ns, "provider")
		waitImportHandled(ns, "provider", v)
		Eventually(serverConditions(ns, "provider")).Should(haveCondition(mcpv1alpha1.ConditionCatalogSynced, metav1.ConditionFalse, mcpv1alpha1.ReasonUnauthorized))

		text := namespaceText(ns)
		for _, part := range []string{p.pathToken, p.keyToken, "key="} {
			Expect(text).NotTo(ContainSubstring(part), "the objects and events of the namespace")
			Expect(logs.String()).NotTo(ContainSubstring(part), "the manager's log")
		}
		expectNoTokenIn("the objects and events of the namespace", text)
		expectNoTokenIn("the manager's log", logs.String())
	})

	It("is not read from a Secret that has not opted in", func() {
		ns := newNamespace()
		p := startSecretURLServer()
		putURLSecret(ns, "provider-url", p.secretURL(), false)
		createServer(ns, "provider", "", withURLFrom("provider-url"), func(s *mcpv1alpha1.McpServerSpec) { s.AllowCredentialOverHTTP = true })
		Eventually(serverConditions(ns, "provider")).Should(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotOptedIn))
		Consistently(p.total, 2*credentialRetry).Should(BeZero(), "nothing is dialled")
	})

	It("is refused over plain http unless a credential may travel in clear text, without quoting it", func() {
		ns := newNamespace()
		p := startSecretURLServer()
		putURLSecret(ns, "provider-url", p.secretURL(), true)
		createServer(ns, "provider", "", withURLFrom("provider-url"))
		Eventually(serverConditions(ns, "provider")).Should(
			haveCondition(mcpv1alpha1.ConditionCredentialsResolved, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretURLInvalid))
		Consistently(p.total, 2*credentialRetry).Should(BeZero(), "nothing is dialled")
		msg := strings.Join(conditionMessages(getServer(ns, "provider").Status.Conditions), "\n")
		Expect(msg).To(ContainSubstring("plain http"))
		Expect(msg).NotTo(ContainSubstring(p.keyToken))
		Expect(msg).NotTo(ContainSubstring(p.pathToken))
	})
})

func conditionMessages(cs []metav1.Condition) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Message)
	}
	return out
}
