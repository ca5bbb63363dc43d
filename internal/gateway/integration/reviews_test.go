package integration_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/api/scheme"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// reviewCounter counts the TokenReviews and SubjectAccessReviews sent
// through a REST config.
type reviewCounter struct {
	mu            sync.Mutex
	token, access int
}

func (c *reviewCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			c.mu.Lock()
			switch {
			case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
				c.token++
			case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
				c.access++
			}
			c.mu.Unlock()
			return next.RoundTrip(r)
		})
	})
	return cfg
}

func (c *reviewCounter) counts() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token, c.access
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var _ = Describe("Review caches", func() {
	It("review a token and an access once while cached, allowed and denied answers alike", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo})
		a := newAgent(ns, "bot")
		a.grant(docs.object(echo))

		counter := &reviewCounter{}
		counted := counter.wrap(cfg)
		c, err := client.New(counted, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
		sar, err := authorizationv1client.NewForConfig(counted)
		Expect(err).NotTo(HaveOccurred())
		reviewer := &authn.TokenReviewAuthenticator{Client: c, Audience: manager.DefaultGatewayAudience}
		authz := &authz.SubjectAccessReviewAuthorizer{Client: sar}
		ctx := context.Background()

		By("an authenticated token")
		id, err := reviewer.Authenticate(ctx, a.token)
		Expect(err).NotTo(HaveOccurred())
		Expect(id.ServiceAccount).To(Equal("bot"))
		_, err = reviewer.Authenticate(ctx, a.token)
		Expect(err).NotTo(HaveOccurred())
		tokens, _ := counter.counts()
		Expect(tokens).To(Equal(1), "one TokenReview for two uses")

		By("a rejected token, cached apart")
		// Of a ServiceAccount token's shape, for the gateway's audience,
		// but not signed by the API server.
		claims, err := json.Marshal(map[string]any{"sub": "system:serviceaccount:" + ns + ":ghost", "aud": []string{manager.DefaultGatewayAudience},
			"exp": time.Now().Add(time.Hour).Unix()})
		Expect(err).NotTo(HaveOccurred())
		forged := "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString(claims) + ".Zm9yZ2Vk"
		for range 2 {
			_, err = reviewer.Authenticate(ctx, forged)
			Expect(err).To(MatchError(authn.ErrUnauthenticated))
		}
		tokens, _ = counter.counts()
		Expect(tokens).To(Equal(2), "one more TokenReview for the rejected token used twice")

		By("a token that cannot be a ServiceAccount token, not reviewed")
		for _, bad := range []string{"not-a-token", tokenFor(ns, "bot", "another-audience")} {
			_, err = reviewer.Authenticate(ctx, bad)
			Expect(err).To(MatchError(authn.ErrUnauthenticated))
		}
		tokens, _ = counter.counts()
		Expect(tokens).To(Equal(2), "no TokenReview for a token that is not a JWT, nor for one bound to another audience")

		By("an allowed and a denied access")
		for range 2 {
			ok, err := authz.CanCall(ctx, id, ns, docs.object(echo))
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
		}
		for range 2 {
			ok, err := authz.CanCall(ctx, id, ns, docs.object(fail))
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeFalse())
		}
		_, access := counter.counts()
		Expect(access).To(Equal(2), "one SubjectAccessReview per answer, each used twice")

		By("a grant of every tool: one review for them all")
		all := newAgent(ns, "all")
		all.grant()
		allID := &authn.Identity{Username: "system:serviceaccount:" + ns + ":all", Namespace: ns, ServiceAccount: "all",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
		for range 3 {
			ok, err := authz.CanCallAll(ctx, allID, ns)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue(), "granted every McpTool")
		}
		ok, err := authz.CanCallAll(ctx, id, ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse(), "granted one tool by name is not granted every tool")
		_, access = counter.counts()
		Expect(access).To(Equal(4), "one review for the grant of every tool, asked three times, and one for the grant by name")

		By("no token in the log")
		Expect(logs.String()).NotTo(ContainSubstring(a.token))
		Expect(logs.String()).NotTo(ContainSubstring("not-a-token"))
	})
})
