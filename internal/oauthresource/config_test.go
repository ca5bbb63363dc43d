package oauthresource_test

import (
	"strings"
	"testing"

	"github.com/mcp-catalog/operator/internal/oauthresource"
)

func TestParseIssuers(t *testing.T) {
	got, err := oauthresource.ParseIssuers([]byte(`
issuers:
- url: https://idp.example.test/realms/a
  audiences: [https://gateway.example.test/mcp, api://gateway]
  claimMappings:
    username: {claim: email, prefix: ""}
    groups: {claim: groups, prefix: "idp-a:"}
    uid: {claim: oid}
- url: https://login.example.test
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ClaimMappings.Username.Prefix == nil || *got[0].ClaimMappings.Groups.Prefix != "idp-a:" ||
		got[0].ClaimMappings.UID.Claim != "oid" || len(got[0].Audiences) != 2 || got[1].ClaimMappings.Username.Prefix != nil {
		t.Errorf("%+v", got)
	}
	// A field the gateway does not know, such as the API server's CEL
	// expressions, is refused rather than ignored.
	if _, err := oauthresource.ParseIssuers([]byte("issuers:\n- url: https://a.example.test\n  claimMappings:\n    username: {expression: claims.sub}\n")); err == nil {
		t.Error("an expression was accepted")
	}
}

func TestOptionsValidate(t *testing.T) {
	empty, system := "", "system:"
	ok := func() oauthresource.Options {
		o := oauthresource.DefaultOptions()
		o.Resource = "https://gateway.example.test/mcp"
		o.Issuers = []oauthresource.Issuer{{URL: "https://idp.example.test"}}
		return o
	}
	if err := ok().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := oauthresource.DefaultOptions().Validate(); err != nil {
		t.Fatalf("disabled: %v", err)
	}
	if v, err := oauthresource.New(oauthresource.DefaultOptions()); v != nil || err != nil {
		t.Fatalf("disabled: %v %v", v, err)
	}
	for name, tc := range map[string]struct {
		mutate func(*oauthresource.Options)
		want   string
	}{
		"issuers without resource": {func(o *oauthresource.Options) { o.Resource = "" }, "no resource"},
		"resource without issuer":  {func(o *oauthresource.Options) { o.Issuers = nil }, "no issuer"},
		"resource over http":       {func(o *oauthresource.Options) { o.Resource = "http://gateway.example.test/mcp" }, "https"},
		"resource with fragment":   {func(o *oauthresource.Options) { o.Resource = "https://gateway.example.test/mcp#x" }, "fragment"},
		"resource with query":      {func(o *oauthresource.Options) { o.Resource = "https://gateway.example.test/mcp?a=b" }, "query"},
		"issuer over http":         {func(o *oauthresource.Options) { o.Issuers[0].URL = "http://idp.example.test" }, "https"},
		"issuer twice":             {func(o *oauthresource.Options) { o.Issuers = append(o.Issuers, o.Issuers[0]) }, "twice"},
		"scope with a space":       {func(o *oauthresource.Options) { o.Scopes = []string{"a b"} }, "scope"},
		"skew too large":           {func(o *oauthresource.Options) { o.ClockSkew = 0 - 1 }, "skew"},
		"bad CA":                   {func(o *oauthresource.Options) { o.Issuers[0].CertificateAuthority = "not pem" }, "PEM"},
		"empty audience":           {func(o *oauthresource.Options) { o.Issuers[0].Audiences = []string{""} }, "audience"},
		"groups without prefix": {func(o *oauthresource.Options) {
			o.Issuers[0].ClaimMappings.Groups = oauthresource.PrefixedClaim{Claim: "groups"}
		}, "prefix"},
		"system username prefix": {func(o *oauthresource.Options) {
			o.Issuers[0].ClaimMappings.Username = oauthresource.PrefixedClaim{Claim: "sub", Prefix: &system}
		}, "system:"},
		"system groups prefix": {func(o *oauthresource.Options) {
			o.Issuers[0].ClaimMappings.Groups = oauthresource.PrefixedClaim{Claim: "groups", Prefix: &system}
		}, "system:"},
		"groups prefix without claim": {func(o *oauthresource.Options) {
			o.Issuers[0].ClaimMappings.Groups = oauthresource.PrefixedClaim{Prefix: &empty}
		}, "without groups.claim"},
	} {
		o := ok()
		tc.mutate(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
		if _, nerr := oauthresource.New(o); nerr == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}
