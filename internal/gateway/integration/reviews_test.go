package integration_test

import (
	"context"
	"net/http"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/api/scheme"
	"github.com/mcp-catalog/operator/internal/gateway"
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
		authn := &gateway.TokenReviewAuthenticator{Client: c, Audience: manager.DefaultGatewayAudience}
		authz := &gateway.SubjectAccessReviewAuthorizer{Client: sar}
		ctx := context.Background()

		By("an authenticated token")
		id, err := authn.Authenticate(ctx, a.token)
		Expect(err).NotTo(HaveOccurred())
		Expect(id.ServiceAccount).To(Equal("bot"))
		_, err = authn.Authenticate(ctx, a.token)
		Expect(err).NotTo(HaveOccurred())
		tokens, _ := counter.counts()
		Expect(tokens).To(Equal(1), "one TokenReview for two uses")

		By("a rejected token, cached apart")
		for range 2 {
			_, err = authn.Authenticate(ctx, "not-a-token")
			Expect(err).To(MatchError(gateway.ErrUnauthenticated))
		}
		tokens, _ = counter.counts()
		Expect(tokens).To(Equal(2), "one more TokenReview for the rejected token used twice")

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

		By("no token in the log")
		Expect(logs.String()).NotTo(ContainSubstring(a.token))
		Expect(logs.String()).NotTo(ContainSubstring("not-a-token"))
	})
})
