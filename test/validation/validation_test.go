package validation

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

const validServer = `
apiVersion: mcp.catalog.dev/v1alpha1
kind: McpServer
metadata:
  name: srv
spec:
  url: https://mcp.example.com/mcp
  dataClass: Internal
`

const validTool = `
apiVersion: mcp.catalog.dev/v1alpha1
kind: McpTool
metadata:
  name: srv.search
spec:
  serverRef: {name: srv}
  remoteName: search
`

const validProfile = `
apiVersion: mcp.catalog.dev/v1alpha1
kind: McpDelegationProfile
metadata:
  name: idp
spec:
  tokenEndpoint: https://idp.example.com/token
  clientID: operator
  clientSecretRef: {name: idp, key: secret}
  allowedAudiences: [api]
  allowedScopes: [read, write]
`

const validShared = `
apiVersion: mcp.catalog.dev/v1alpha1
kind: McpSharedServer
metadata:
  name: docs
spec:
  server: {namespace: platform, name: docs}
`

const validPolicy = `
apiVersion: mcp.catalog.dev/v1alpha1
kind: McpAccessPolicy
metadata:
  name: agents
spec:
  serviceAccounts: [support-agent]
  maxDataClass: Internal
`

// seventeenRules are one rule more than a rule set may hold, as YAML.
func seventeenRules() string {
	rules := make([]string, 17)
	for i := range rules {
		rules[i] = fmt.Sprintf("{name: r%d, expression: 'true'}", i)
	}
	return strings.Join(rules, ", ")
}

// newNamespace gives each spec its own namespace so that names never clash.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "validation-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// object decodes a manifest and applies edits, given as "path=yaml value"
// with a dotted path; a value of "<delete>" removes the field.
func object(manifest string, edits ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(manifest), &u.Object)).To(Succeed())
	for _, e := range edits {
		path, raw, ok := strings.Cut(e, "=")
		Expect(ok).To(BeTrue(), "edit %q has no '='", e)
		fields := strings.Split(path, ".")
		if raw == "<delete>" {
			unstructured.RemoveNestedField(u.Object, fields...)
			continue
		}
		var v any
		Expect(yaml.Unmarshal([]byte(raw), &v)).To(Succeed(), "value of edit %q", e)
		Expect(unstructured.SetNestedField(u.Object, v, fields...)).To(Succeed())
	}
	return u
}

// create submits obj as kubectl does, rejecting unknown fields.
func create(ns string, obj *unstructured.Unstructured) error {
	obj.SetNamespace(ns)
	return k8sClient.Create(ctx, obj, client.FieldValidation("Strict"))
}

var _ = Describe("the API server rejects bad manifests", func() {
	DescribeTable("with a message naming the field and what is allowed",
		func(manifest string, edits []string, wantField, wantMessage string) {
			err := create(newNamespace(), object(manifest, edits...))
			Expect(err).To(HaveOccurred(), "manifest was accepted")
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got: %v", err)
			Expect(err.Error()).To(ContainSubstring(wantField))
			Expect(err.Error()).To(ContainSubstring(wantMessage))
		},
		Entry("McpServer without url or urlFrom", validServer, []string{"spec.url=<delete>"}, "spec", "exactly one of url or urlFrom"),
		Entry("a URL elicitation host given as a URL", validTool, []string{"spec.interaction={urlElicitationHosts: ['https://login.example.com']}"}, "spec.interaction.urlElicitationHosts[0]", "should match"),
		Entry("a URL elicitation host with a wildcard inside", validTool, []string{"spec.interaction={urlElicitationHosts: ['login.*.example.com']}"}, "spec.interaction.urlElicitationHosts[0]", "should match"),
		Entry("a URL elicitation host without a domain", validTool, []string{"spec.interaction={urlElicitationHosts: ['*.com.']}"}, "spec.interaction.urlElicitationHosts[0]", "should match"),
		Entry("form elicitation neither allowed nor refused", validTool, []string{"spec.interaction={formElicitation: Sometimes}"}, "spec.interaction.formElicitation", "Unsupported value"),
		Entry("an empty sensitive field name", validTool, []string{"spec.interaction={sensitiveFields: ['']}"}, "spec.interaction.sensitiveFields[0]", "at least 1"),
		Entry("McpServer with both url and urlFrom", validServer, []string{"spec.urlFrom={secretRef: {name: s, key: url}}"}, "spec", "exactly one of url or urlFrom"),
		Entry("McpServer with urlFrom but no Secret reference", validServer, []string{"spec.url=<delete>", "spec.urlFrom={}"}, "spec.urlFrom.secretRef", "Required value"),
		Entry("McpServer reading its URL from a Secret in another namespace", validServer, []string{"spec.url=<delete>", "spec.urlFrom={secretRef: {name: s, key: url, namespace: other}}"}, "spec.urlFrom.secretRef", "cannot name a namespace"),
		Entry("McpServer with a token in the query", validServer, []string{"spec.url=https://mcp.example.com/mcp?token=abc"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with an access_token in the query", validServer, []string{"spec.url=https://mcp.example.com/mcp?x=1&access_token=abc"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with an API key in the query", validServer, []string{"spec.url=https://mcp.example.com/mcp?api_key=abc"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with an apiKey in the query (case)", validServer, []string{"spec.url=https://mcp.example.com/mcp?apiKey=abc"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with a bare key in the query", validServer, []string{"spec.url=https://mcp.example.com/mcp?KEY=abc"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with a password in the query", validServer, []string{"spec.url=https://mcp.example.com/mcp?Password=abc"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with a passwd in the query", validServer, []string{"spec.url=https://mcp.example.com/mcp?passwd=abc"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with a client_secret in the query", validServer, []string{"spec.url=https://mcp.example.com/mcp?client_secret=abc"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with an Azure SAS sig in the query", validServer, []string{"spec.url=https://mcp.example.com/mcp?sv=2024&sig=abc"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with a presigned S3 URL", validServer, []string{"spec.url=https://mcp.example.com/mcp?X-Amz-Credential=a&X-Amz-Signature=abc"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with auth in the query", validServer, []string{"spec.url=https://mcp.example.com/mcp?auth=abc"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with a percent-encoded credential name", validServer, []string{"spec.url=https://mcp.example.com/mcp?a=%20&%74oken=abc"}, "spec.url", "percent-encoded parameter names"),
		Entry("McpServer with a credential parameter without a value", validServer, []string{"spec.url=https://mcp.example.com/mcp?x=1&access_token"}, "spec.url", "must not carry a credential in its query"),
		Entry("McpServer with a credential after a ';' separator", validServer, []string{"spec.url=https://mcp.example.com/mcp?a=1;token=abc"}, "spec.url", "must not use ';'"),
		Entry("McpServer with an ftp url", validServer, []string{"spec.url=ftp://mcp.example.com/"}, "spec.url", "must use the https or http scheme"),
		Entry("McpServer with a url that is not absolute", validServer, []string{"spec.url=https://"}, "spec.url", "absolute URL with a host"),
		Entry("McpServer with user information in the url", validServer, []string{"spec.url=https://user:pw@mcp.example.com/mcp"}, "spec.url", "must not contain user information"),
		Entry("McpServer with a user name in the url", validServer, []string{"spec.url=http://token@mcp.example.com/mcp"}, "spec.url", "must not contain user information"),
		Entry("McpServer with a fragment in the url", validServer, []string{"spec.url=https://mcp.example.com/mcp#frag"}, "spec.url", "must not contain a fragment"),
		Entry("McpServer without dataClass", validServer, []string{"spec.dataClass=<delete>"}, "spec.dataClass", "Required value"),
		Entry("McpServer with an unknown dataClass", validServer, []string{"spec.dataClass=Secret"}, "spec.dataClass", `supported values: "Public", "Internal", "Confidential", "Restricted"`),
		Entry("McpServer with a catalog budget above 64 MiB", validServer, []string{"spec.import.maxCatalogBytes=67108865"}, "spec.import.maxCatalogBytes", "less than or equal to 67108864"),
		Entry("McpServer with a catalog budget below 64 KiB", validServer, []string{"spec.import.maxCatalogBytes=1024"}, "spec.import.maxCatalogBytes", "greater than or equal to 65536"),
		Entry("McpServer with two auth modes", validServer, []string{
			"spec.auth={bearer: {secretRef: {name: s, key: k}}, header: {name: X-Key, secretRef: {name: s, key: k}}}",
		}, "spec.auth", "at most one of bearer, header, delegated or perPerson"),
		Entry("McpServer with per-person and bearer auth", validServer, []string{
			"spec.auth={bearer: {secretRef: {name: s, key: k}}, perPerson: {clientID: gw}}",
		}, "spec.auth", "at most one of bearer, header, delegated or perPerson"),
		Entry("McpServer with a per-person authorization server carrying user information", validServer, []string{"spec.auth={perPerson: {clientID: gw, authorizationServer: 'https://u:p@idp.example.com'}}"}, "spec.auth.perPerson.authorizationServer", "no user information, query or fragment"),
		Entry("McpServer with a per-person client secret but no client", validServer, []string{"spec.auth={perPerson: {clientSecretRef: {name: s, key: k}}}"}, "spec.auth.perPerson", "name its clientID too"),
		Entry("McpServer with a per-person authorization server that is no http(s) URL", validServer, []string{"spec.auth={perPerson: {clientID: gw, authorizationServer: 'javascript:alert(1)'}}"}, "spec.auth.perPerson.authorizationServer", "must be an http(s) URL"),
		Entry("McpServer with bearer auth but no Secret reference", validServer, []string{"spec.auth={bearer: {}}"}, "spec.auth.bearer.secretRef", "Required value"),
		Entry("McpServer with header auth but no Secret reference", validServer, []string{"spec.auth={header: {name: X-Key}}"}, "spec.auth.header.secretRef", "Required value"),
		Entry("McpServer with a Secret reference without a key", validServer, []string{"spec.auth={bearer: {secretRef: {name: s}}}"}, "spec.auth.bearer.secretRef.key", "Required value"),
		Entry("McpServer with a header name that is not an HTTP token", validServer, []string{"spec.auth={header: {name: 'X Key', secretRef: {name: s, key: k}}}"}, "spec.auth.header.name", "must be an HTTP header name"),
		Entry("McpServer sending its credential in Authorization through header mode", validServer, []string{"spec.auth={header: {name: Authorization, secretRef: {name: s, key: k}}}"}, "spec.auth.header.name", "names a header the transport sets itself"),
		Entry("McpServer sending its credential in Host", validServer, []string{"spec.auth={header: {name: host, secretRef: {name: s, key: k}}}"}, "spec.auth.header.name", "names a header the transport sets itself"),
		Entry("McpServer sending its credential in Content-Length", validServer, []string{"spec.auth={header: {name: Content-Length, secretRef: {name: s, key: k}}}"}, "spec.auth.header.name", "names a header the transport sets itself"),
		Entry("McpServer sending its credential in Content-Type", validServer, []string{"spec.auth={header: {name: Content-Type, secretRef: {name: s, key: k}}}"}, "spec.auth.header.name", "names a header the transport sets itself"),
		Entry("McpServer sending its credential in Accept", validServer, []string{"spec.auth={header: {name: Accept, secretRef: {name: s, key: k}}}"}, "spec.auth.header.name", "names a header the transport sets itself"),
		Entry("McpServer sending its credential in Mcp-Session-Id", validServer, []string{"spec.auth={header: {name: Mcp-Session-Id, secretRef: {name: s, key: k}}}"}, "spec.auth.header.name", "names a header the transport sets itself"),
		Entry("McpServer sending its credential in MCP-Protocol-Version", validServer, []string{"spec.auth={header: {name: MCP-Protocol-Version, secretRef: {name: s, key: k}}}"}, "spec.auth.header.name", "names a header the transport sets itself"),
		Entry("McpServer sending its credential in Mcp-Method", validServer, []string{"spec.auth={header: {name: mcp-method, secretRef: {name: s, key: k}}}"}, "spec.auth.header.name", "names a header the transport sets itself"),
		Entry("McpServer reading a bearer Secret from another namespace", validServer, []string{"spec.auth={bearer: {secretRef: {name: s, key: k, namespace: other}}}"}, "spec.auth.bearer.secretRef", "cannot name a namespace"),
		Entry("McpServer reading a header Secret from another namespace", validServer, []string{"spec.auth={header: {name: X-Key, secretRef: {name: s, key: k, namespace: other}}}"}, "spec.auth.header.secretRef", "cannot name a namespace"),
		Entry("McpServer reading a discovery Secret from another namespace", validServer, []string{"spec.auth={delegated: {profileRef: {name: p}, audience: api, discoverySecretRef: {name: s, key: k, namespace: other}}}"}, "spec.auth.delegated.discoverySecretRef", "cannot name a namespace"),
		Entry("McpServer with a zero operationTimeout", validServer, []string{"spec.operationTimeout=0s"}, "spec.operationTimeout", "more than 0s and at most 5m"),
		Entry("McpServer with a negative operationTimeout", validServer, []string{"spec.operationTimeout=-5s"}, "spec.operationTimeout", "more than 0s and at most 5m"),
		Entry("McpServer with an operationTimeout above 5 minutes", validServer, []string{"spec.operationTimeout=5m1s"}, "spec.operationTimeout", "more than 0s and at most 5m"),
		Entry("McpServer with a health-check interval below the minimum", validServer, []string{"spec.healthCheck={interval: 1s}"}, "spec.healthCheck.interval", "at least 5s"),
		Entry("McpServer with an import interval below the minimum", validServer, []string{"spec.import={interval: 10s}"}, "spec.import.interval", "between 1m and 24h"),
		Entry("McpServer with an import interval above a day", validServer, []string{"spec.import={interval: 25h}"}, "spec.import.interval", "between 1m and 24h"),
		Entry("McpServer with a page ceiling of zero", validServer, []string{"spec.import={maxPages: 0}"}, "spec.import.maxPages", "should be greater than or equal to 1"),
		Entry("McpServer sending a bearer token over plain http", validServer, []string{
			"spec.url=http://mcp.example.com/mcp", "spec.auth={bearer: {secretRef: {name: s, key: k}}}",
		}, "spec", "allowCredentialOverHTTP"),
		Entry("McpServer sending a header credential over plain HTTP (upper-case scheme)", validServer, []string{
			"spec.url=HTTP://mcp.example.com/mcp", "spec.auth={header: {name: X-Key, secretRef: {name: s, key: k}}}",
		}, "spec", "allowCredentialOverHTTP"),
		Entry("McpServer whose name is too long to prefix its tools", validServer, []string{"metadata.name=" + strings.Repeat("a", 46)}, "metadata.name", "DNS label of at most 45 characters"),
		Entry("McpServer whose name contains a dot", validServer, []string{"metadata.name=a.b"}, "metadata.name", "DNS label of at most 45 characters"),
		Entry("McpServer sharing that accepts ClientElicitation without Person", validServer, []string{"spec.sharing={namespaces: [team], approvalModes: [ClientElicitation]}"}, "spec.sharing.approvalModes", "Person is always accepted"),
		Entry("McpServer sharing with an unknown approval mode", validServer, []string{"spec.sharing={namespaces: [team], approvalModes: [Person, Agent]}"}, "spec.sharing.approvalModes[1]", "supported values"),
		Entry("McpServer sharing with unknown approvers", validServer, []string{"spec.sharing={namespaces: [team], approvers: Anyone}"}, "spec.sharing.approvers", "supported values"),

		Entry("McpTool with a remoteName containing a space", validTool, []string{"spec.remoteName=has space"}, "spec.remoteName", "should match"),
		Entry("McpTool with a remoteName containing a slash", validTool, []string{"spec.remoteName=a/b"}, "spec.remoteName", "should match"),
		Entry("McpTool with a remoteName of 129 characters", validTool, []string{"spec.remoteName=" + strings.Repeat("a", 129)}, "spec.remoteName", "may not be more than 128"),
		Entry("McpTool without serverRef", validTool, []string{"spec.serverRef=<delete>"}, "spec.serverRef", "Required value"),
		Entry("McpTool loosening approval", validTool, []string{"spec.approvalRequired=false"}, "spec.approvalRequired", "can only tighten"),
		Entry("McpTool with an unknown dataClass", validTool, []string{"spec.dataClass=TopSecret"}, "spec.dataClass", "supported values"),
		Entry("McpTool with a malformed approved hash", validTool, []string{"spec.approvedDefinitionHash=abc"}, "spec.approvedDefinitionHash", "should match"),
		Entry("McpTool reviewed as read-only and destructive", validTool, []string{"spec.reviewedEffects={definitionHash: 'sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', readOnly: true, destructive: true}"}, "spec.reviewedEffects", "cannot be destructive"),
		Entry("McpTool with effects reviewed for no definition", validTool, []string{"spec.reviewedEffects={readOnly: true}"}, "spec.reviewedEffects.definitionHash", "Required value"),
		Entry("McpServer requiring approval for an unknown effect", validServer, []string{"spec.approvalByEffect={requiredFor: [Teleports]}"}, "spec.approvalByEffect.requiredFor[0]", "supported values"),
		Entry("McpAccessPolicy lowering the ceiling to an unknown class", validPolicy, []string{"spec.maxDataClassByEffect=[{effect: Write, maxDataClass: TopSecret}]"}, "spec.maxDataClassByEffect[0].maxDataClass", "supported values"),
		Entry("McpTool with an argument rule named like no DNS label", validTool, []string{"spec.argumentRules={rules: [{name: Recipients_Domain, expression: 'true'}]}"}, "spec.argumentRules.rules[0].name", "should match"),
		Entry("McpTool with an argument rule without an expression", validTool, []string{"spec.argumentRules={rules: [{name: r}]}"}, "spec.argumentRules.rules[0].expression", "Required value"),
		Entry("McpTool with two argument rules of one name", validTool, []string{"spec.argumentRules={rules: [{name: r, expression: 'true'}, {name: r, expression: 'false'}]}"}, "spec.argumentRules.rules[1]", "Duplicate value"),
		Entry("McpTool fixing an argument without a value", validTool, []string{"spec.argumentRules={fixed: [{name: table}]}"}, "spec.argumentRules.fixed[0].value", "Required value"),
		Entry("McpSharedServer adding a rule named like no DNS label", validShared, []string{"spec.argumentRules=[{tool: search, rules: [{name: Team_Spaces, expression: 'true'}]}]"}, "spec.argumentRules[0].rules[0].name", "should match"),
		Entry("McpSharedServer adding two rules of one name to a tool", validShared, []string{"spec.argumentRules=[{tool: search, rules: [{name: r, expression: 'true'}, {name: r, expression: 'false'}]}]"}, "spec.argumentRules[0].rules[1]", "Duplicate value"),
		Entry("McpSharedServer listing one tool twice", validShared, []string{"spec.argumentRules=[{tool: search, rules: [{name: a, expression: 'true'}]}, {tool: search, rules: [{name: b, expression: 'true'}]}]"}, "spec.argumentRules[1]", "Duplicate value"),
		Entry("McpSharedServer adding no rule to a tool", validShared, []string{"spec.argumentRules=[{tool: search, rules: []}]"}, "spec.argumentRules[0].rules", "should have at least 1 items"),
		Entry("McpSharedServer adding 17 rules to a tool", validShared, []string{"spec.argumentRules=[{tool: search, rules: [" + seventeenRules() + "]}]"}, "spec.argumentRules[0].rules", "must have at most 16 items"),
		Entry("McpTool with reviewed text of a parameter without a description", validTool, []string{"spec.reviewedText={parameters: [{name: q}]}"}, "spec.reviewedText.parameters[0].description", "Required value"),

		Entry("McpDelegationProfile with an http token endpoint", validProfile, []string{"spec.tokenEndpoint=http://idp.example.com/token"}, "spec.tokenEndpoint", "must be an https URL"),
		Entry("McpDelegationProfile without a client secret reference", validProfile, []string{"spec.clientSecretRef=<delete>"}, "spec.clientSecretRef", "Required value"),
		Entry("McpServer with a CA bundle reference naming neither kind", validServer, []string{"spec.tls={caBundleRef: {}}"}, "spec.tls.caBundleRef", "exactly one of configMapKeyRef or secretKeyRef"),
		Entry("McpServer with a CA bundle reference naming both kinds", validServer,
			[]string{"spec.tls={caBundleRef: {configMapKeyRef: {name: ca, key: ca.crt}, secretKeyRef: {name: ca, key: ca.crt}}}"}, "spec.tls.caBundleRef", "exactly one of configMapKeyRef or secretKeyRef"),
		Entry("McpServer reading a CA bundle Secret from another namespace", validServer,
			[]string{"spec.tls={caBundleRef: {secretKeyRef: {name: ca, key: ca.crt, namespace: other}}}"}, "spec.tls.caBundleRef.secretKeyRef", "cannot name a namespace"),
		Entry("McpServer with a CA bundle ConfigMap name that is no object name", validServer,
			[]string{"spec.tls={caBundleRef: {configMapKeyRef: {name: Corporate_CA, key: ca.crt}}}"}, "spec.tls.caBundleRef.configMapKeyRef.name", "should match"),
		Entry("McpDelegationProfile with a CA bundle reference naming neither kind", validProfile, []string{"spec.tls={caBundleRef: {}}"}, "spec.tls.caBundleRef", "exactly one of configMapKeyRef or secretKeyRef"),
		Entry("McpDelegationProfile reading its client secret from another namespace", validProfile, []string{"spec.clientSecretRef={name: s, key: k, namespace: other}"}, "spec.clientSecretRef", "cannot name a namespace"),
		Entry("McpDelegationProfile without audiences", validProfile, []string{"spec.allowedAudiences=[]"}, "spec.allowedAudiences", "should have at least 1 items"),
		Entry("McpDelegationProfile actor with an audience outside the profile's", validProfile, []string{
			"spec.actors=[{identity: 'system:serviceaccount:a:b', enabled: true, subjectTokenSecretRef: {name: s, key: k}, allowedAudiences: [api, other]}]",
		}, "spec", "allowedAudiences must be a subset of spec.allowedAudiences"),
		Entry("McpDelegationProfile actor with a scope outside the profile's", validProfile, []string{
			"spec.actors=[{identity: 'system:serviceaccount:a:b', enabled: true, subjectTokenSecretRef: {name: s, key: k}, allowedScopes: [admin]}]",
		}, "spec", "allowedScopes must be a subset of spec.allowedScopes"),
		Entry("McpDelegationProfile actor without an explicit enabled flag", validProfile, []string{
			"spec.actors=[{identity: 'system:serviceaccount:a:b', subjectTokenSecretRef: {name: s, key: k}}]",
		}, "spec.actors[0].enabled", "Required value"),
		Entry("McpDelegationProfile actor with neither a subject token Secret nor the caller's token", validProfile, []string{
			"spec.actors=[{identity: 'alice@example.com', enabled: true}]",
		}, "spec.actors[0]", "names subjectTokenSecretRef, or takes the caller's token"),
		Entry("McpDelegationProfile actor with both a subject token Secret and the caller's token", validProfile, []string{
			"spec.actors=[{identity: 'alice@example.com', enabled: true, subjectTokenFrom: Caller, subjectTokenSecretRef: {name: s, key: k}}]",
		}, "spec.actors[0]", "names subjectTokenSecretRef, or takes the caller's token"),
		Entry("McpDelegationProfile with an unknown subject token type", validProfile, []string{"spec.subjectTokenType=urn:example:other"}, "spec.subjectTokenType", "supported values"),
		Entry("McpAccessPolicy blocking an unknown content type", validPolicy, []string{"spec.resultInspection={blockedContentTypes: [Video]}"}, "spec.resultInspection.blockedContentTypes[0]", "supported values"),
		Entry("McpAccessPolicy allowing a media type without a subtype", validPolicy, []string{"spec.resultInspection={mimeTypes: [image]}"}, "spec.resultInspection.mimeTypes[0]", "should match"),
		Entry("McpAccessPolicy allowing a media type in capitals", validPolicy, []string{"spec.resultInspection={mimeTypes: ['IMAGE/PNG']}"}, "spec.resultInspection.mimeTypes[0]", "should match"),
		Entry("McpAccessPolicy allowing no media type at all", validPolicy, []string{"spec.resultInspection={mimeTypes: []}"}, "spec.resultInspection.mimeTypes", "at least 1 items"),
		Entry("McpAccessPolicy naming no one", validPolicy, []string{"spec.serviceAccounts=<delete>"}, "spec", "name at least one of serviceAccounts, users or groups"),
		Entry("McpAccessPolicy naming a user in system:", validPolicy, []string{"spec.users=['system:admin']"}, "spec.users[0]", "never an OAuth identity"),
		Entry("McpAccessPolicy naming a group in system:", validPolicy, []string{"spec.groups=['system:masters']"}, "spec.groups[0]", "never an OAuth identity's"),
	)

	DescribeTable("immutable McpTool fields",
		func(field, value, wantField string) {
			ns := newNamespace()
			obj := object(validTool)
			Expect(create(ns, obj)).To(Succeed())
			Expect(unstructured.SetNestedField(obj.Object, value, strings.Split(field, ".")...)).To(Succeed())
			err := k8sClient.Update(ctx, obj)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring(wantField + " is immutable"))
		},
		Entry("serverRef", "spec.serverRef.name", "other", "spec.serverRef"),
		Entry("remoteName", "spec.remoteName", "other", "spec.remoteName"),
	)
})

var _ = It("refuses a field that could carry a token instead of silently dropping it", func() {
	err := create(newNamespace(), object(validServer, "spec.auth={bearer: {token: abc, secretRef: {name: s, key: k}}}"))
	Expect(err).To(HaveOccurred(), "manifest was accepted")
	Expect(err.Error()).To(ContainSubstring(`unknown field "spec.auth.bearer.token"`))
})

var _ = Describe("the API server accepts and defaults good manifests", func() {
	It("reads an omitted approvalRequired back as true and defaults the budgets", func() {
		ns := newNamespace()
		Expect(create(ns, object(validServer))).To(Succeed())
		var s mcpv1alpha1.McpServer
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "srv"}, &s)).To(Succeed())
		Expect(s.Spec.ApprovalRequired).NotTo(BeNil())
		Expect(*s.Spec.ApprovalRequired).To(BeTrue())
		Expect(s.Spec.OperationTimeout.Duration.String()).To(Equal("20s"))
		Expect(s.Spec.HealthCheck.Interval.Duration.String()).To(Equal("1m0s"))
		Expect(s.Spec.Import.Interval).NotTo(BeNil(), "catalogs are re-imported periodically unless told otherwise")
		Expect(s.Spec.Import.Interval.Duration.String()).To(Equal("1h0m0s"))
		Expect(s.Spec.Import.MaxPages).To(BeNumerically(">", 0))
		Expect(s.Spec.Import.MaxTools).To(BeNumerically(">", 0))
		Expect(s.Spec.Import.MaxCatalogBytes).To(Equal(int64(16 << 20)))
		// kstatus reads observedGeneration -1 as "not reconciled yet".
		Expect(s.Status.ObservedGeneration).To(Equal(int64(-1)))
	})

	It("defaults a sharing's approval terms to the safe ones: Person, decided by the owner's people", func() {
		ns := newNamespace()
		Expect(create(ns, object(validServer, "spec.sharing={namespaces: [team]}"))).To(Succeed())
		var s mcpv1alpha1.McpServer
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "srv"}, &s)).To(Succeed())
		Expect(s.Spec.Sharing.ApprovalModes).To(Equal([]mcpv1alpha1.ApprovalMode{mcpv1alpha1.ApprovalPerson}))
		Expect(s.Spec.Sharing.Approvers).To(Equal(mcpv1alpha1.SharedApproversOwner))
	})

	It("keeps an explicit approvalRequired: false", func() {
		ns := newNamespace()
		Expect(create(ns, object(validServer, "spec.approvalRequired=false"))).To(Succeed())
		var s mcpv1alpha1.McpServer
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "srv"}, &s)).To(Succeed())
		Expect(*s.Spec.ApprovalRequired).To(BeFalse())
	})

	DescribeTable("edge cases that are allowed",
		func(manifest string, edits ...string) {
			Expect(create(newNamespace(), object(manifest, edits...))).To(Succeed())
		},
		Entry("plain http without a credential", validServer, "spec.url=http://mcp.example.com/mcp"),
		Entry("plain http with a credential and the explicit opt-in", validServer,
			"spec.url=http://mcp.example.com/mcp", "spec.auth={bearer: {secretRef: {name: s, key: k}}}", "spec.allowCredentialOverHTTP=true"),
		Entry("an https URL with an @ in its path", validServer, "spec.url=https://mcp.example.com/@team/mcp"),
		Entry("a query that carries no credential", validServer, "spec.url=https://mcp.example.com/mcp?region=eu&monkey=1&keyboard=us&version=2"),
		Entry("a ';' in the path", validServer, "spec.url=https://mcp.example.com/a;b/mcp"),
		Entry("a percent-encoded value and a credential-like word in the path", validServer, "spec.url=https://mcp.example.com/token/mcp?q=a%20b&page=2"),
		Entry("the URL read from a Secret instead", validServer, "spec.url=<delete>", "spec.urlFrom={secretRef: {name: provider-url, key: url}}"),
		Entry("a URL read from a Secret together with a bearer credential", validServer,
			"spec.url=<delete>", "spec.urlFrom={secretRef: {name: provider-url, key: url}}", "spec.auth={bearer: {secretRef: {name: s, key: k}}}"),
		Entry("an operationTimeout of exactly 5 minutes", validServer, "spec.operationTimeout=5m"),
		Entry("an empty auth block (no authentication)", validServer, "spec.auth={}"),
		Entry("a custom header credential", validServer, "spec.auth={header: {name: X-Api-Key, secretRef: {name: s, key: k}}}"),
		Entry("a CA bundle from a ConfigMap", validServer, "spec.tls={caBundleRef: {configMapKeyRef: {name: corporate-ca, key: ca.crt}}}"),
		Entry("a CA bundle from a Secret for the token endpoint", validProfile, "spec.tls={caBundleRef: {secretKeyRef: {name: corporate-ca, key: ca.crt}}}"),
		Entry("a tool name with every allowed character", validTool, "spec.remoteName=Aa0_.-", "metadata.name=srv.x.ifqtaxzofu"),
		Entry("a tool tightening approval and class", validTool, "spec.approvalRequired=true", "spec.dataClass=Restricted"),
		Entry("a tool whose server may sample, ask for forms without a password, and send the user to its sign-in hosts", validTool,
			"spec.interaction={sampling: true, formElicitation: Allowed, sensitiveFields: [password, api_key], urlElicitationHosts: [login.example.com, '*.auth.example.com']}"),
		Entry("a tool whose server may ask for nothing", validTool, "spec.interaction={formElicitation: Refused}"),
		Entry("a sharing that accepts ClientElicitation and lets the consumer's people decide", validServer,
			"spec.sharing={namespaces: [team], approvalModes: [Person, ClientElicitation], approvers: Consumer}"),
		Entry("a consumer's argument rules for a shared tool", validShared,
			"spec.argumentRules=[{tool: search_docs, rules: [{name: team-spaces, expression: \"args.space in ['eng']\", message: 'team spaces only'}]}]"),
		Entry("a tool with reviewed text and argument rules", validTool,
			"spec.reviewedText={title: Search, description: 'Searches the docs.', parameters: [{name: q, description: 'What to look for.'}]}",
			"spec.argumentRules={fixed: [{name: space, value: '\"public\"'}], rules: [{name: short-query, expression: 'args.q.size() < 100', message: 'keep queries short'}]}"),
		Entry("an access policy for people by user and group only", validPolicy,
			"spec.serviceAccounts=<delete>", "spec.users=['alice@example.test']", "spec.groups=['oidc:support']"),
		Entry("an actor within the profile's sets", validProfile,
			"spec.actors=[{identity: 'system:serviceaccount:a:b', enabled: false, subjectTokenSecretRef: {name: s, key: k}, allowedAudiences: [api], allowedScopes: [read]}]"),
	)

	It("accepts every sample in config/samples, the demo agent make run applies among them", func() {
		ns := newNamespace()
		files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		nested, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(nested).To(ContainElement(HaveSuffix("demo_agent.yaml")))
		files = append(files, nested...)
		applied := 0
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			data, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
			for {
				obj := &unstructured.Unstructured{}
				if err := dec.Decode(&obj.Object); err != nil {
					Expect(err.Error()).To(Equal("EOF"), "decoding %s", f)
					break
				}
				if len(obj.Object) == 0 {
					continue
				}
				Expect(create(ns, obj)).To(Succeed(), fmt.Sprintf("sample %s (%s %s)", f, obj.GetKind(), obj.GetName()))
				applied++
			}
		}
		Expect(applied).To(BeNumerically(">=", 10))
	})
})
