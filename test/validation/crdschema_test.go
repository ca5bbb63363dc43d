package validation

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// reviewedStrings lists every string field of every spec, with why it cannot
// hold a credential. A new string field fails the walk below until it is
// either a Secret reference or added here after the same review.
var reviewedStrings = map[string]string{
	"McpServer.spec.url":                                                   "an endpoint; user information and credential-named query parameters are rejected by CEL",
	"McpServer.spec.dataClass":                                             "an enum",
	"McpServer.spec.operationTimeout":                                      "a duration",
	"McpServer.spec.import.interval":                                       "a duration",
	"McpServer.spec.healthCheck.interval":                                  "a duration",
	"McpServer.spec.auth.header.name":                                      "a header name; the value comes from secretRef",
	"McpServer.spec.auth.delegated.audience":                               "an OAuth audience identifier",
	"McpServer.spec.auth.delegated.scopes[]":                               "OAuth scope names",
	"McpServer.spec.auth.perPerson.clientID":                               "a public OAuth client identifier; the secret comes from clientSecretRef",
	"McpServer.spec.auth.perPerson.authorizationServer":                    "an issuer identifier; user information, query and fragment are rejected by CEL",
	"McpServer.spec.auth.perPerson.scopes[]":                               "OAuth scope names",
	"McpTool.spec.remoteName":                                              "a tool name, [A-Za-z0-9_.-]",
	"McpTool.spec.dataClass":                                               "an enum",
	"McpTool.spec.approvedDefinitionHash":                                  "a sha256 digest of a public definition",
	"McpTool.spec.reviewedText.title":                                      "text every agent offered the tool reads: published, never a secret",
	"McpTool.spec.reviewedText.description":                                "text every agent offered the tool reads: published, never a secret",
	"McpTool.spec.reviewedText.parameters[].name":                          "an argument name of the tool's schema",
	"McpTool.spec.reviewedText.parameters[].description":                   "text every agent offered the tool reads: published, never a secret",
	"McpTool.spec.argumentRules.fixed[].name":                              "an argument name of the tool's schema",
	"McpTool.spec.argumentRules.fixed[].value":                             "an argument value sent to the server in the request body, readable by every reader of the McpTool; the API text and docs/gateway.md say never to put a credential there (the McpServer's auth carries those, from Secrets)",
	"McpTool.spec.argumentRules.rules[].name":                              "a rule name, a DNS label",
	"McpTool.spec.argumentRules.rules[].expression":                        "a CEL expression shown in conditions and to reviewers",
	"McpTool.spec.argumentRules.rules[].message":                           "text an agent reads when the rule refuses its call: published, never a secret",
	"McpTool.spec.interaction.formElicitation":                             "an enum",
	"McpTool.spec.interaction.sensitiveFields[]":                           "a field name of a server's form, at most 128 characters",
	"McpTool.spec.interaction.urlElicitationHosts[]":                       "a host name (or *. and a domain), by its pattern",
	"McpPrompt.spec.remoteName":                                            "a prompt name, [A-Za-z0-9_.-]",
	"McpPrompt.spec.dataClass":                                             "an enum",
	"McpPrompt.spec.approvedDefinitionHash":                                "a sha256 digest of a public definition",
	"McpPrompt.spec.reviewedText.title":                                    "text every agent offered the prompt reads: published, never a secret",
	"McpPrompt.spec.reviewedText.description":                              "text every agent offered the prompt reads: published, never a secret",
	"McpPrompt.spec.reviewedText.arguments[].name":                         "an argument name of the prompt's definition",
	"McpPrompt.spec.reviewedText.arguments[].description":                  "text every agent offered the prompt reads: published, never a secret",
	"McpResource.spec.reviewedText.title":                                  "text every agent offered the resource reads: published, never a secret",
	"McpResource.spec.reviewedText.description":                            "text every agent offered the resource reads: published, never a secret",
	"McpResource.spec.uri":                                                 "the URI of a resource the server lists to every client: public",
	"McpResource.spec.uriTemplate":                                         "the URI template of a resource template the server lists to every client: public",
	"McpResource.spec.dataClass":                                           "an enum",
	"McpResource.spec.approvedDefinitionHash":                              "a sha256 digest of a public definition",
	"McpDelegationProfile.spec.tokenEndpoint":                              "an https endpoint; user information is rejected by CEL",
	"McpDelegationProfile.spec.clientID":                                   "a public OAuth client identifier; the secret comes from clientSecretRef",
	"McpDelegationProfile.spec.allowedAudiences[]":                         "OAuth audience identifiers",
	"McpDelegationProfile.spec.allowedScopes[]":                            "OAuth scope names",
	"McpDelegationProfile.spec.subjectTokenType":                           "an enum of RFC 8693 token type URNs",
	"McpDelegationProfile.spec.actors[].identity":                          "a Kubernetes user name",
	"McpDelegationProfile.spec.actors[].allowedAudiences[]":                "OAuth audience identifiers",
	"McpDelegationProfile.spec.actors[].allowedScopes[]":                   "OAuth scope names",
	"McpDelegationProfile.spec.actors[].subjectTokenFrom":                  "an enum: Secret or Caller",
	"McpAccessPolicy.spec.serviceAccounts[]":                               "ServiceAccount names",
	"McpAccessPolicy.spec.users[]":                                         "Kubernetes user names, as OAuth access tokens map (never system:)",
	"McpAccessPolicy.spec.groups[]":                                        "Kubernetes group names, as OAuth access tokens map (never system:)",
	"McpAccessPolicy.spec.maxDataClass":                                    "an enum",
	"McpAccessPolicy.spec.approvalMode":                                    "an enum",
	"McpAccessPolicy.spec.approvalRequiredFor[]":                           "an enum",
	"McpAccessPolicy.spec.resultInspection.hiddenCharacters":               "an enum",
	"McpAccessPolicy.spec.resultInspection.instructionLike":                "an enum",
	"McpAccessPolicy.spec.resultInspection.secrets":                        "an enum",
	"McpAccessPolicy.spec.resultInspection.blockedContentTypes[]":          "an enum",
	"McpAccessPolicy.spec.resultInspection.mimeTypes[]":                    "a media type pattern of at most 127 characters (type/subtype or type/*)",
	"McpAccessPolicy.spec.writeDown.action":                                "an enum",
	"McpAccessPolicy.spec.writeDown.window":                                "a duration",
	"McpAccessPolicy.spec.writeDown.fromDataClass":                         "an enum",
	"McpReadMark.spec.caller":                                              "a Kubernetes user name",
	"McpReadMark.spec.marks[].dataClass":                                   "an enum",
	"McpReadMark.spec.marks[].tool":                                        "a tool name",
	"McpReadMark.spec.marks[].readAt":                                      "a timestamp",
	"McpReadMark.spec.marks[].expiresAt":                                   "a timestamp",
	"McpAccessPolicy.spec.maxDataClassByEffect[].effect":                   "an enum",
	"McpAccessPolicy.spec.maxDataClassByEffect[].maxDataClass":             "an enum",
	"McpServer.spec.approvalByEffect.requiredFor[]":                        "an enum",
	"McpTool.spec.reviewedEffects.definitionHash":                          "a sha256 hash by its pattern",
	"McpServer.spec.sharing.namespaces[]":                                  "namespace names",
	"McpServer.spec.sharing.namespaceSelector.matchExpressions[].key":      "a label key (pattern)",
	"McpServer.spec.sharing.namespaceSelector.matchExpressions[].operator": "an enum",
	"McpServer.spec.sharing.namespaceSelector.matchExpressions[].values[]": "label values (pattern)",
	"McpServer.spec.sharing.approvalModes[]":                               "an enum",
	"McpServer.spec.sharing.approvers":                                     "an enum",
	"McpSharedServer.spec.disabledTools[]":                                 "tool names, [A-Za-z0-9_.-]",
	"McpSharedServer.spec.maxDataClass":                                    "an enum",
	"McpSharedServer.spec.argumentRules[].tool":                            "a tool's remote name, [A-Za-z0-9_.-]",
	"McpSharedServer.spec.argumentRules[].rules[].name":                    "a rule name, a DNS label",
	"McpSharedServer.spec.argumentRules[].rules[].expression":              "a CEL expression shown in conditions and to reviewers",
	"McpSharedServer.spec.argumentRules[].rules[].message":                 "text an agent reads when the rule refuses its call: published, never a secret",
	"McpCallApproval.spec.tool":                                            "an McpTool name, or the name a shared tool is called by",
	"McpCallApproval.spec.localName":                                       "a tool name",
	"McpCallApproval.spec.server":                                          "an McpServer name",
	"McpCallApproval.spec.ownerServer.namespace":                           "a namespace name (a DNS label, by its pattern)",
	"McpCallApproval.spec.ownerServer.name":                                "an McpServer name (a DNS subdomain, by its pattern)",
	"McpCallApproval.spec.ownerServer.uid":                                 "an object UID (hex and dashes, by its pattern)",
	"McpCallApproval.spec.caller":                                          "a Kubernetes user name",
	"McpCallApproval.spec.callerGroups[]":                                  "Kubernetes group names",
	"McpCallApproval.spec.dataClass":                                       "an enum",
	"McpCallApproval.spec.argumentsHash":                                   "a sha256 digest (pattern); the arguments are never stored",
	"McpCallApproval.spec.definitionHash":                                  "a sha256 digest of a public definition",
	"McpCallApproval.spec.expiresAt":                                       "a timestamp",
	"McpCallApproval.spec.seal":                                            "an HMAC the gateway computes; it reveals nothing of its key",
	"McpCallApproval.spec.decision":                                        "an enum",
	"McpCallApproval.spec.decidedBy":                                       "a Kubernetes user name, enforced by the admission policy",
	"McpCallApproval.spec.reason":                                          "a person's note on a decision, written by hand, never by the operator",
}

// isReference reports whether an object schema is a reference to another
// object: only name (and, for Secrets, key and the forbidden namespace).
func isReference(s apiextensionsv1.JSONSchemaProps) bool {
	if s.Type != "object" || len(s.Properties) == 0 {
		return false
	}
	for name := range s.Properties {
		switch name {
		case "name", "key", "namespace":
		default:
			return false
		}
	}
	_, hasName := s.Properties["name"]
	return hasName
}

// walk visits every leaf of a schema and reports string leaves and places
// where arbitrary data could be stored.
func walk(path string, s apiextensionsv1.JSONSchemaProps, visit func(path string, s apiextensionsv1.JSONSchemaProps)) {
	visit(path, s)
	if isReference(s) {
		return
	}
	for name, p := range s.Properties {
		walk(path+"."+name, p, visit)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(path+"[]", *s.Items.Schema, visit)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(path+"{}", *s.AdditionalProperties.Schema, visit)
	}
}

func TestNoSpecFieldCanHoldACredential(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) != 9 {
		t.Fatalf("want the nine generated CRDs, found %v (%v)", files, err)
	}
	seen := map[string]bool{}
	refs := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
			if !ok {
				t.Fatalf("%s %s has no spec", crd.Spec.Names.Kind, v.Name)
			}
			walk(crd.Spec.Names.Kind+".spec", spec, func(path string, s apiextensionsv1.JSONSchemaProps) {
				if isReference(s) {
					refs[path] = true
					return
				}
				if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
					t.Errorf("%s preserves unknown fields: anything, a token included, could be stored there", path)
				}
				if s.AdditionalProperties != nil && (s.AdditionalProperties.Allows || s.AdditionalProperties.Schema != nil) {
					t.Errorf("%s is a free-form map: a token could be stored there", path)
				}
				if s.Type != "string" {
					return
				}
				seen[path] = true
				if _, ok := reviewedStrings[path]; !ok {
					t.Errorf("%s is a string that is neither a Secret reference nor reviewed as unable to hold a credential", path)
				}
			})
		}
	}
	var stale []string
	for path := range reviewedStrings {
		if !seen[path] {
			stale = append(stale, path)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("reviewed fields no longer in the CRDs (remove them): %s", strings.Join(stale, ", "))
	}
	// The walk must have met the references it skips, or it proved nothing.
	for _, ref := range []string{
		"McpServer.spec.auth.bearer.secretRef",
		"McpServer.spec.auth.header.secretRef",
		"McpServer.spec.auth.delegated.discoverySecretRef",
		"McpServer.spec.auth.perPerson.clientSecretRef",
		"McpServer.spec.auth.perPerson.discoverySecretRef",
		"McpDelegationProfile.spec.clientSecretRef",
		"McpDelegationProfile.spec.actors[].subjectTokenSecretRef",
	} {
		if !refs[ref] {
			t.Errorf("the walk did not meet the Secret reference %s", ref)
		}
	}
}
