package credentials_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/secret"
	"github.com/mcp-catalog/operator/internal/tokenexchange"
	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/oauthserver"
)

const (
	clientID     = "catalog-operator"
	clientSecret = "client-secret-4b1d8e"
	subjectToken = "subject-token-a9c2f7"
	actor        = "system:serviceaccount:agents:triage"
	audience     = "records-api"
	// person is a person who reaches the gateway with an OAuth access
	// token, personToken.
	person      = "alice@example.com"
	personToken = "person-access-token-7e31"
)

var kube client.Client

// optIn is the label that lets a Secret be used as a credential.
var optIn = map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}

func TestMain(m *testing.M) {
	plane, err := controlplane.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kube = plane.Client
	code := m.Run()
	if err := plane.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
	os.Exit(code)
}

// fixture is a namespace with a delegation profile, its Secrets, a
// delegated McpServer in front of a real go-sdk MCP server that accepts only
// the exchanged token, and a token endpoint.
type fixture struct {
	ns       string
	as       *oauthserver.Server
	upstream *mcpserver.Server
	server   *mcpv1alpha1.McpServer
	resolver *credentials.Resolver
	secrets  []string
}

func setup(t *testing.T, scopes []string, actorScopes []string, enabled bool) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{as: oauthserver.Start(t, clientID, clientSecret)}
	f.as.AddSubject(subjectToken, actor)
	f.upstream = mcpserver.Start(t, mcpserver.Options{Flavor: mcpserver.GoSDK, RequireBearer: oauthserver.TokenFor(actor, audience, scopes)})
	f.secrets = []string{clientSecret, subjectToken, oauthserver.TokenFor(actor, audience, scopes)}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "delegation-"}}
	must(t, kube.Create(ctx, ns))
	f.ns = ns.Name
	must(t, kube.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "idp", Labels: optIn}, StringData: map[string]string{"secret": clientSecret}}))
	must(t, kube.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "triage-subject", Labels: optIn}, StringData: map[string]string{"token": subjectToken}}))
	must(t, kube.Create(ctx, &mcpv1alpha1.McpDelegationProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "idp"},
		Spec: mcpv1alpha1.McpDelegationProfileSpec{
			TokenEndpoint: f.as.URL, ClientID: clientID,
			ClientSecretRef:  mcpv1alpha1.SecretKeySelector{Name: "idp", Key: "secret"},
			AllowedAudiences: []string{audience}, AllowedScopes: []string{"records.read", "records.write"},
			Actors: []mcpv1alpha1.DelegationActor{
				{Identity: actor, Enabled: &enabled, SubjectTokenSecretRef: &mcpv1alpha1.SecretKeySelector{Name: "triage-subject", Key: "token"}, AllowedScopes: actorScopes},
				{Identity: "system:serviceaccount:agents:retired", Enabled: ptr(false), SubjectTokenSecretRef: &mcpv1alpha1.SecretKeySelector{Name: "triage-subject", Key: "token"}},
				{Identity: person, Enabled: ptr(true), SubjectTokenFrom: mcpv1alpha1.SubjectTokenFromCaller},
				{Identity: "system:serviceaccount:agents:caller-mode", Enabled: ptr(true), SubjectTokenFrom: mcpv1alpha1.SubjectTokenFromCaller},
			},
		},
	}))
	f.server = &mcpv1alpha1.McpServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "records"},
		Spec: mcpv1alpha1.McpServerSpec{
			URL: f.upstream.URL, DataClass: mcpv1alpha1.DataClassRestricted,
			AllowCredentialOverHTTP: true, AllowPrivateNetwork: true,
			Auth: &mcpv1alpha1.McpServerAuth{Delegated: &mcpv1alpha1.DelegatedAuth{
				ProfileRef: mcpv1alpha1.LocalObjectReference{Name: "idp"}, Audience: audience, Scopes: scopes,
			}},
		},
	}
	must(t, kube.Create(ctx, f.server))
	te, err := tokenexchange.New(tokenexchange.Options{RootCAs: f.as.Roots, Egress: egress.Policy{AllowAllPrivate: true}})
	must(t, err)
	f.resolver = &credentials.Resolver{Secrets: kube, Profiles: kube, Exchanger: te}
	return f
}

func (f *fixture) call(t *testing.T, cred *mcp.Credential) (*mcp.CallOutcome, error) {
	t.Helper()
	return f.callAt(t, cred, nil)
}

// callAt is call with a client whose clock is clk (nil: the real one).
func (f *fixture) callAt(t *testing.T, cred *mcp.Credential, clk mcp.Clock) (*mcp.CallOutcome, error) {
	t.Helper()
	return mcp.New(mcp.Options{AllowPrivateNetworks: true, Clock: clk}).CallTool(context.Background(), mcp.Endpoint{
		Name: f.ns + "/records", URL: f.upstream.URL, Credential: cred, AllowInsecureCredential: true, AllowPrivateNetwork: true,
	}, "echo", map[string]any{"text": "hello"})
}

// noSecrets fails when any of the fixture's secrets appears in err.
func (f *fixture) noSecrets(t *testing.T, err error) {
	t.Helper()
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		text := fmt.Sprintf(format, err)
		for _, s := range f.secrets {
			if strings.Contains(text, s) {
				t.Errorf("a secret appears in the error (%s): %s", format, text)
			}
		}
	}
}

func TestDelegatedCallPresentsTheExchangedTokenOnly(t *testing.T) {
	scopes := []string{"records.read"}
	f := setup(t, scopes, nil, true)
	cred, err := f.resolver.ForCall(context.Background(), f.server, credentials.Actor{Username: actor})
	if err != nil {
		t.Fatalf("ForCall: %v", err)
	}
	form := f.as.LastForm()
	for key, want := range map[string]string{
		"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": subjectToken,
		"subject_token_type": "urn:ietf:params:oauth:token-type:access_token", "audience": audience,
		"scope": "records.read", "resource": f.upstream.URL, "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
	} {
		if got := form.Get(key); got != want {
			t.Errorf("token exchange %s = %q, want %q", key, got, want)
		}
	}
	if cred.Expires.IsZero() || time.Until(cred.Expires) > 5*time.Minute+time.Second {
		t.Errorf("credential expiry %v does not follow expires_in", cred.Expires)
	}
	out, err := f.call(t, cred)
	if err != nil || out.IsError || out.Text != "hello" {
		t.Fatalf("delegated call: %+v, %v", out, err)
	}
	if got := f.upstream.Stats().LastCredential; got != "Bearer "+oauthserver.TokenFor(actor, audience, scopes) {
		t.Errorf("the MCP server saw another credential")
	}

	// The MCP server accepts only the exchanged token: the actor's own
	// subject token is refused, so delegation is what makes the call work.
	_, err = f.call(t, &mcp.Credential{Value: secret.New(subjectToken)})
	if mcp.KindOf(err) != mcp.KindUnauthorized {
		t.Errorf("the subject token was not refused by the MCP server: %v", err)
	}
}

func TestRefusedBeforeAnyTokenRequest(t *testing.T) {
	cases := []struct {
		name        string
		scopes      []string
		actorScopes []string
		enabled     bool
		actor       credentials.Actor
		reason      string
		kind        tokenexchange.Kind
	}{
		{name: "unmapped actor", scopes: []string{"records.read"}, enabled: true, actor: credentials.Actor{Username: "system:serviceaccount:agents:other"}, reason: credentials.ReasonActorNotMapped},
		{name: "cluster-admin without a mapping", scopes: []string{"records.read"}, enabled: true, actor: credentials.Actor{Username: "kubernetes-admin", Groups: []string{"system:masters"}}, reason: credentials.ReasonActorNotMapped},
		{name: "disabled actor", scopes: []string{"records.read"}, enabled: false, actor: credentials.Actor{Username: actor}, reason: credentials.ReasonActorDisabled},
		{name: "another disabled actor", scopes: []string{"records.read"}, enabled: true, actor: credentials.Actor{Username: "system:serviceaccount:agents:retired"}, reason: credentials.ReasonActorDisabled},
		{name: "scope outside the actor's set", scopes: []string{"records.write"}, actorScopes: []string{"records.read"}, enabled: true, actor: credentials.Actor{Username: actor}, reason: credentials.ReasonExchangeFailed, kind: tokenexchange.KindScopeNotAllowed},
		{name: "scope outside the profile's set", scopes: []string{"records.admin"}, enabled: true, actor: credentials.Actor{Username: actor}, reason: credentials.ReasonExchangeFailed, kind: tokenexchange.KindScopeNotAllowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t, c.scopes, c.actorScopes, c.enabled)
			_, err := f.resolver.ForCall(context.Background(), f.server, c.actor)
			var de *credentials.DelegationError
			if !errors.As(err, &de) || de.Reason != c.reason {
				t.Fatalf("err = %v, want reason %s", err, c.reason)
			}
			if c.kind != "" && tokenexchange.KindOf(err) != c.kind {
				t.Errorf("kind = %q, want %q", tokenexchange.KindOf(err), c.kind)
			}
			if n := f.as.Requests(); n != 0 {
				t.Errorf("the token endpoint received %d requests", n)
			}
			f.noSecrets(t, err)
		})
	}
}

func TestAudienceOutsideTheProfileIsRefusedBeforeSending(t *testing.T) {
	f := setup(t, []string{"records.read"}, nil, true)
	srv := f.server.DeepCopy()
	srv.Spec.Auth.Delegated.Audience = "billing-api"
	_, err := f.resolver.ForCall(context.Background(), srv, credentials.Actor{Username: actor})
	if tokenexchange.KindOf(err) != tokenexchange.KindAudienceNotAllowed || f.as.Requests() != 0 {
		t.Fatalf("err = %v after %d requests, want %s before any", err, f.as.Requests(), tokenexchange.KindAudienceNotAllowed)
	}
}

func TestOAuthErrorsAreTyped(t *testing.T) {
	f := setup(t, []string{"records.read"}, nil, true)
	for code, kind := range map[string]tokenexchange.Kind{
		"invalid_request": tokenexchange.KindInvalidRequest, "invalid_grant": tokenexchange.KindInvalidGrant,
		"invalid_target": tokenexchange.KindInvalidTarget, "invalid_scope": tokenexchange.KindInvalidScope,
		"unauthorized_client": tokenexchange.KindUnauthorizedClient, "unsupported_grant_type": tokenexchange.KindUnsupportedGrantType,
	} {
		f.as.FailWith(code)
		_, err := f.resolver.ForCall(context.Background(), f.server, credentials.Actor{Username: actor})
		if tokenexchange.KindOf(err) != kind {
			t.Errorf("%s: err = %v, want %s", code, err, kind)
		}
		f.noSecrets(t, err)
	}
	f.as.FailWith("")
	// A wrong client secret is the endpoint's invalid_client.
	must(t, kube.Update(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "idp", Labels: optIn}, StringData: map[string]string{"secret": "not-the-secret"}}))
	_, err := f.resolver.ForCall(context.Background(), f.server, credentials.Actor{Username: actor})
	if tokenexchange.KindOf(err) != tokenexchange.KindInvalidClient {
		t.Errorf("wrong client secret: err = %v, want %s", err, tokenexchange.KindInvalidClient)
	}
}

func TestATokenExpiredBeforeALegEndsTheOperation(t *testing.T) {
	f := setup(t, []string{"records.read"}, nil, true)
	f.as.SetExpiresIn(60)
	cred, err := f.resolver.ForCall(context.Background(), f.server, credentials.Actor{Username: actor})
	if err != nil {
		t.Fatal(err)
	}
	if cred.Expires.IsZero() {
		t.Fatal("the exchanged token carries no expiry")
	}
	// Before the expiry the token is sent.
	if _, err := f.call(t, cred); err != nil {
		t.Fatalf("call before the expiry: %v", err)
	}
	// The client's clock at the expiry: no leg is started with the token.
	before := f.upstream.Requests()
	_, err = f.callAt(t, cred, testingclock.NewFakePassiveClock(cred.Expires))
	if mcp.KindOf(err) != mcp.KindCredentialExpired {
		t.Fatalf("err = %v, want %s", err, mcp.KindCredentialExpired)
	}
	if f.upstream.Requests() != before {
		t.Errorf("an expired token was sent")
	}
}

func TestDiscoveryNeverUsesAnActorToken(t *testing.T) {
	f := setup(t, []string{"records.read"}, nil, true)
	cred, err := f.resolver.Discovery(context.Background(), f.server)
	if err != nil || cred != nil {
		t.Fatalf("discovery without a discovery Secret = %v, %v; want no credential", cred, err)
	}
	must(t, kube.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "discovery", Labels: optIn}, StringData: map[string]string{"token": "discovery-token"}}))
	srv := f.server.DeepCopy()
	srv.Spec.Auth.Delegated.DiscoverySecretRef = &mcpv1alpha1.SecretKeySelector{Name: "discovery", Key: "token"}
	cred, err = f.resolver.Discovery(context.Background(), srv)
	if err != nil || cred == nil || cred.Value.Reveal() != "discovery-token" {
		t.Fatalf("discovery credential = %v, %v", cred, err)
	}
	if f.as.Requests() != 0 {
		t.Errorf("discovery requested a token exchange")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// An McpDelegationProfile names Secrets too: neither its client secret nor
// an actor's subject token is sent to the token endpoint unless the Secret
// opted in.
func TestDelegationSendsOnlySecretsThatOptedIn(t *testing.T) {
	for _, name := range []string{"idp", "triage-subject"} {
		t.Run(name, func(t *testing.T) {
			f := setup(t, []string{"records.read"}, nil, true)
			var s corev1.Secret
			must(t, kube.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, &s))
			s.Labels = nil
			must(t, kube.Update(context.Background(), &s))

			_, err := f.resolver.ForCall(context.Background(), f.server, credentials.Actor{Username: actor})
			var missing *credentials.MissingError
			if !errors.As(err, &missing) || missing.Reason != mcpv1alpha1.ReasonSecretNotOptedIn {
				t.Fatalf("err = %v, want a MissingError with reason %s", err, mcpv1alpha1.ReasonSecretNotOptedIn)
			}
			if !strings.Contains(err.Error(), mcpv1alpha1.LabelCredential) {
				t.Errorf("the error does not name the label: %v", err)
			}
			if n := f.as.Requests(); n != 0 {
				t.Errorf("the token endpoint received %d requests; want none", n)
			}
			f.noSecrets(t, err)
		})
	}
}

// A profile's CA bundle, read from a ConfigMap, is what the token endpoint
// is verified against; without it the exchange fails as an untrusted
// certificate and nothing reaches the endpoint's handler.
func TestProfileCABundleTrustsTheTokenEndpoint(t *testing.T) {
	ctx := context.Background()
	f := setup(t, []string{"records.read"}, nil, true)
	te, err := tokenexchange.New(tokenexchange.Options{Egress: egress.Policy{AllowAllPrivate: true}})
	must(t, err)
	f.resolver.Exchanger = te

	_, err = f.resolver.ForCall(ctx, f.server, credentials.Actor{Username: actor})
	var de *credentials.DelegationError
	if !errors.As(err, &de) || tokenexchange.KindOf(err) != tokenexchange.KindUntrustedCertificate {
		t.Fatalf("without a bundle: %v, want a refused exchange of kind %s", err, tokenexchange.KindUntrustedCertificate)
	}
	if n := f.as.Requests(); n != 0 {
		t.Fatalf("the untrusted endpoint handled %d requests", n)
	}

	var p mcpv1alpha1.McpDelegationProfile
	must(t, kube.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: "idp"}, &p))
	p.Spec.TLS = &mcpv1alpha1.TLSSettings{CABundleRef: &mcpv1alpha1.CABundleReference{
		ConfigMapKeyRef: &mcpv1alpha1.ConfigMapKeySelector{Name: "idp-ca", Key: "ca.crt"},
	}}
	must(t, kube.Update(ctx, &p))
	_, err = f.resolver.ForCall(ctx, f.server, credentials.Actor{Username: actor})
	var unusable *credentials.UnusableCABundleError
	if !errors.As(err, &unusable) {
		t.Fatalf("bundle not there yet: %v, want an unusable CA bundle", err)
	}

	must(t, kube.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "idp-ca"},
		Data:       map[string]string{"ca.crt": string(f.as.CAPEM)},
	}))
	cred, err := f.resolver.ForCall(ctx, f.server, credentials.Actor{Username: actor})
	if err != nil {
		t.Fatalf("with the profile's bundle: %v", err)
	}
	if out, err := f.call(t, cred); err != nil || out.Text != "hello" {
		t.Fatalf("delegated call: %+v, %v", out, err)
	}
}

// A profile entry with subjectTokenFrom: Caller exchanges the access token
// the person presented at the gateway, and only at a token endpoint on
// its issuer's origin; a caller without one (a ServiceAccount) is refused
// before anything is sent.
func TestCallerTokenAsSubject(t *testing.T) {
	scopes := []string{"records.read"}
	f := setup(t, scopes, nil, true)
	f.as.AddSubject(personToken, person)
	f.secrets = append(f.secrets, personToken)
	issuer := strings.TrimSuffix(f.as.URL, "/token") // the token endpoint's origin
	cred, err := f.resolver.ForCall(context.Background(), f.server, credentials.Actor{Username: person, SubjectToken: secret.New(personToken), Issuer: issuer})
	if err != nil {
		t.Fatalf("ForCall: %v", err)
	}
	if got := f.as.LastForm().Get("subject_token"); got != personToken {
		t.Errorf("the subject token sent is not the caller's")
	}
	if cred.Value.Reveal() != oauthserver.TokenFor(person, audience, scopes) {
		t.Errorf("the credential is not the token exchanged for the person")
	}
	sent := f.as.Requests()
	for name, c := range map[string]struct {
		actor  credentials.Actor
		reason string
	}{
		"a ServiceAccount, whose gateway token is never sent": {credentials.Actor{Username: "system:serviceaccount:agents:caller-mode"}, credentials.ReasonCallerTokenUnavailable},
		"a person's token of an issuer on another origin":     {credentials.Actor{Username: person, SubjectToken: secret.New(personToken), Issuer: "https://idp.example.com"}, credentials.ReasonCallerTokenElsewhere},
		"a person without their token":                        {credentials.Actor{Username: person, Issuer: issuer}, credentials.ReasonCallerTokenUnavailable},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.resolver.ForCall(context.Background(), f.server, c.actor)
			var de *credentials.DelegationError
			if !errors.As(err, &de) || de.Reason != c.reason {
				t.Fatalf("err = %v, want reason %s", err, c.reason)
			}
			if n := f.as.Requests(); n != sent {
				t.Errorf("the token endpoint received %d more requests", n-sent)
			}
			f.noSecrets(t, err)
		})
	}
}
