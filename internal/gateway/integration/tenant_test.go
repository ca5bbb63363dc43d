package integration_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// keyedProxy serves a real MCP server only to requests whose query carries
// key, as providers that issue secret URLs do.
type keyedProxy struct {
	*httptest.Server
	key string

	mu      sync.Mutex
	served  int
	refused int
}

func startKeyedProxy(up *mcpserver.Server) *keyedProxy {
	p := &keyedProxy{key: newSecretValue()}
	inner := up.Handler()
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := r.URL.Query().Get("key") == p.key
		p.mu.Lock()
		if ok {
			p.served++
		} else {
			p.refused++
		}
		p.mu.Unlock()
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.RawQuery, r2.RequestURI = "", ""
		inner.ServeHTTP(w, r2)
	}))
	DeferCleanup(p.Close)
	return p
}

func (p *keyedProxy) requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served + p.refused
}

var _ = Describe("Tenant boundary", func() {
	It("calls a server whose URL is a Secret, and stops sending it once the Secret no longer opts in and the gateway's copy has expired", func() {
		ns := newNamespace()
		up := mcpserver.Start(GinkgoT(), mcpserver.Options{})
		p := startKeyedProxy(up)
		urlSecret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "provider-url",
				Labels: map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}},
			Data: map[string][]byte{"url": []byte(p.URL + mcpserver.Path + "?key=" + p.key)},
		}
		Expect(k8sClient.Create(context.Background(), urlSecret)).To(Succeed())
		provider := declare(ns, "provider", "", []string{echo}, func(s *mcpv1alpha1.McpServerSpec) {
			s.URLFrom = &mcpv1alpha1.URLSource{SecretRef: mcpv1alpha1.SecretKeySelector{Name: "provider-url", Key: "url"}}
			s.AllowCredentialOverHTTP = true
		})
		a := newAgent(ns, "bot")
		a.grant(provider.object(echo))
		a.ceiling(mcpv1alpha1.DataClassInternal)
		cs := a.connect(nil, modernEra)

		isErr, txt := call(cs, provider.local(echo), map[string]any{"text": "through a secret URL"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(Equal("through a secret URL"))
		Expect(up.Calls(echo)).To(Equal(1))

		// The Secret's owner withdraws it: once the gateway's copy has
		// expired (docs/adr/025-gateway-budgets.md), the next call reads it
		// again and sends nothing.
		patch := client.MergeFrom(urlSecret.DeepCopy())
		urlSecret.Labels = nil
		Expect(k8sClient.Patch(context.Background(), urlSecret, patch)).To(Succeed())
		clock.advance(credentials.DefaultCacheTTL)
		before := p.requests()
		isErr, txt = call(cs, provider.local(echo), map[string]any{"text": "again"})
		Expect(isErr).To(BeTrue())
		Expect(txt).NotTo(ContainSubstring(p.key))
		Expect(p.requests()).To(Equal(before), "nothing reached the server")
		Expect(up.Calls(echo)).To(Equal(1))

		for where, text := range map[string]string{"manager logs": logs.String(), "audit records": strings.Join(auditLog.all(), "\n"), "Events": allEvents()} {
			Expect(text).NotTo(ContainSubstring(p.key), "the URL's key appears in the %s", where)
		}
	})
})
