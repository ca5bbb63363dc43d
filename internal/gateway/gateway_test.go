package gateway

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/upstream"
)

func completeOptions() Options {
	c := fake.NewClientBuilder().Build()
	return Options{
		Reader:    c,
		Authn:     &authn.TokenReviewAuthenticator{Client: c},
		Authz:     &authz.SubjectAccessReviewAuthorizer{Client: k8sfake.NewClientset().AuthorizationV1()},
		Upstreams: &upstream.Endpoints{Credentials: &credentials.Resolver{Secrets: c, Profiles: c}},
		MCP:       mcp.New(mcp.Options{}),
		Audit:     audit.NewJSONLines(io.Discard),
		// Made by hand, it throws every Event away.
		Recorder: &events.FakeRecorder{},
	}
}

func TestNewRefusesAnIncompleteGateway(t *testing.T) {
	for name, clear := range map[string]func(*Options){
		"Reader":    func(o *Options) { o.Reader = nil },
		"Authn":     func(o *Options) { o.Authn = nil },
		"Authz":     func(o *Options) { o.Authz = nil },
		"Upstreams": func(o *Options) { o.Upstreams = nil },
		"MCP":       func(o *Options) { o.MCP = nil },
		"Audit":     func(o *Options) { o.Audit = nil },
		"Recorder":  func(o *Options) { o.Recorder = nil },
	} {
		o := completeOptions()
		clear(&o)
		g, err := New(o)
		if !errors.Is(err, ErrMissingOption) || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: New() = %v, %v; want ErrMissingOption naming it", name, g, err)
		}
	}
}

// The gateway New returns serves MCP at Path, behind authentication, and
// nothing else.
func TestNewServesMCPAtPathOnly(t *testing.T) {
	g, err := New(completeOptions())
	if err != nil {
		t.Fatal(err)
	}
	if g.Handler() == nil {
		t.Fatal("New returned a gateway without a handler")
	}
	for path, want := range map[string]int{Path: http.StatusUnauthorized, "/other": http.StatusNotFound} {
		rec := httptest.NewRecorder()
		g.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{}`)))
		if rec.Code != want {
			t.Errorf("POST %s without a token: status %d, want %d", path, rec.Code, want)
		}
	}
}
