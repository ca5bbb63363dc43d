package validation

import (
	"encoding/json"
	"errors"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// credentialURL is a URL that carries a credential, and the parts of it that
// are secret: none of them may appear in what the API server answers.
type credentialURL struct {
	name    string
	url     string
	secrets []string
}

// A rejection is printed by kubectl, kept in CI logs and shown by Argo CD;
// a URL refused for carrying a credential must not be repeated in it.
var _ = Describe("a URL carrying a credential", func() {
	// Each secret is distinct, so that a leak names its case, and at least
	// six characters long, the window searched for.
	serverURLs := []credentialURL{
		{"a user and password", "https://usr-Alice4:pw-Lq7x9Fk2Zm@mcp.example.com/mcp", []string{"usr-Alice4", "pw-Lq7x9Fk2Zm"}},
		{"a token as the user", "https://ghp-Hq2Lw9XzK4m@mcp.example.com/mcp", []string{"ghp-Hq2Lw9XzK4m"}},
		{"a token in the query", "https://mcp.example.com/mcp?token=sk-live-Tz8Rb3Nc5V", []string{"sk-live-Tz8Rb3Nc5V"}},
		{"an api_key in the query", "https://mcp.example.com/mcp?region=eu&api_key=ak-Wd4Gh6Jp1S", []string{"ak-Wd4Gh6Jp1S"}},
		{"an access_token in the query", "https://mcp.example.com/mcp?access_token=at-Yc2Vn8Mx5Q", []string{"at-Yc2Vn8Mx5Q"}},
		{"a token in the fragment", "https://mcp.example.com/mcp#access_token=fr-Pb7Kd3Wz9L", []string{"fr-Pb7Kd3Wz9L"}},
		{"a bare fragment", "https://mcp.example.com/mcp#fg-Rx5Tq1Hm8C", []string{"fg-Rx5Tq1Hm8C"}},
		{"an upper-case TOKEN", "https://mcp.example.com/mcp?TOKEN=up-Mn4Bv6Cx2Z", []string{"up-Mn4Bv6Cx2Z"}},
		{"an Api_Key in mixed case", "https://mcp.example.com/mcp?Api_Key=mx-Qw3Er5Ty7U", []string{"mx-Qw3Er5Ty7U"}},
		{"an upper-case ACCESS_TOKEN", "https://mcp.example.com/mcp?ACCESS_TOKEN=uc-Io9Pa2Sd4F", []string{"uc-Io9Pa2Sd4F"}},
		{"an upper-case scheme and user", "HTTPS://USR-BOB7:UP-Gh6Jk8Lz1X@mcp.example.com/mcp", []string{"USR-BOB7", "UP-Gh6Jk8Lz1X"}},
		{"a token after a ';'", "https://mcp.example.com/mcp?a=1;token=sc-Cv3Bn5Mq7W", []string{"sc-Cv3Bn5Mq7W"}},
		{"a percent-encoded token name", "https://mcp.example.com/mcp?%74oken=pe-Er4Ty6Ui8O", []string{"pe-Er4Ty6Ui8O"}},
		{"a user and password, not http", "ftp://usr-Carol2:ft-As2Df4Gh6J@mcp.example.com/", []string{"usr-Carol2", "ft-As2Df4Gh6J"}},
		{"a user and password, no host", "https://usr-Dave9:nh-Zx1Cv3Bn5M@", []string{"usr-Dave9", "nh-Zx1Cv3Bn5M"}},
		{"a token in a URL over the size", "https://mcp.example.com/mcp?token=lg-Qa1Ws3Ed5R&pad=" + strings.Repeat("p", 2048), []string{"lg-Qa1Ws3Ed5R"}},
		{"a token and plain http", "http://usr-Erin3:hp-Rf4Tg6Yh8U@mcp.example.com/mcp?token=hq-Uj7Ik9Ol2P", []string{"usr-Erin3", "hp-Rf4Tg6Yh8U", "hq-Uj7Ik9Ol2P"}},
	}
	profileURLs := []credentialURL{
		{"a user and password", "https://usr-Frank6:tp-Lk9Jh7Gf5D@idp.example.com/token", []string{"usr-Frank6", "tp-Lk9Jh7Gf5D"}},
		{"a client_secret in the query", "https://idp.example.com/token?client_secret=cs-Sa8Df6Gh4J", []string{"cs-Sa8Df6Gh4J"}},
		{"an access_token in the query", "https://idp.example.com/token?access_token=ta-Pl0Ok9Ij8U", []string{"ta-Pl0Ok9Ij8U"}},
		{"an upper-case API_KEY", "https://idp.example.com/token?API_KEY=tk-Mj6Nh5Bg4V", []string{"tk-Mj6Nh5Bg4V"}},
		{"a token in the fragment", "https://idp.example.com/token#token=tf-Cd3Xs2Za1Q", []string{"tf-Cd3Xs2Za1Q"}},
		{"a user and password over http", "HTTP://USR-GRACE1:th-Wq1Er2Ty3U@idp.example.com/token", []string{"USR-GRACE1", "th-Wq1Er2Ty3U"}},
	}

	// refusedWithoutSecrets checks that err is the API server's refusal and
	// that neither its message nor its details hold any part of the secrets
	// (every run of six characters), nor the URL itself.
	refusedWithoutSecrets := func(err error, c credentialURL) {
		GinkgoHelper()
		Expect(err).To(HaveOccurred(), "a URL carrying a credential was accepted")
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got: %v", err)
		var status apierrors.APIStatus
		Expect(errors.As(err, &status)).To(BeTrue(), "not an API status: %v", err)
		details, jerr := json.Marshal(status.Status())
		Expect(jerr).NotTo(HaveOccurred())
		answer := err.Error() + "\n" + string(details)
		Expect(answer).NotTo(ContainSubstring(c.url))
		for _, secret := range c.secrets {
			if len(secret) < 6 {
				Fail("the secret " + secret + " is shorter than the search window")
			}
			for i := 0; i+6 <= len(secret); i++ {
				part := secret[i : i+6]
				Expect(answer).NotTo(ContainSubstring(part), "the refusal repeats %q of the secret %q: %s", part, secret, answer)
			}
		}
	}

	DescribeTable("in an McpServer's spec.url is refused without repeating it",
		func(c credentialURL) {
			ns := newNamespace()
			bad := object(validServer)
			Expect(unstructured.SetNestedField(bad.Object, c.url, "spec", "url")).To(Succeed())
			refusedWithoutSecrets(create(ns, bad), c)

			// A change to an existing object is checked the same way.
			good := object(validServer)
			Expect(create(ns, good)).To(Succeed())
			Expect(unstructured.SetNestedField(good.Object, c.url, "spec", "url")).To(Succeed())
			refusedWithoutSecrets(k8sClient.Update(ctx, good), c)
		},
		entries(serverURLs),
	)

	DescribeTable("in an McpDelegationProfile's spec.tokenEndpoint is refused without repeating it",
		func(c credentialURL) {
			ns := newNamespace()
			bad := object(validProfile)
			Expect(unstructured.SetNestedField(bad.Object, c.url, "spec", "tokenEndpoint")).To(Succeed())
			refusedWithoutSecrets(create(ns, bad), c)

			good := object(validProfile)
			Expect(create(ns, good)).To(Succeed())
			Expect(unstructured.SetNestedField(good.Object, c.url, "spec", "tokenEndpoint")).To(Succeed())
			refusedWithoutSecrets(k8sClient.Update(ctx, good), c)
		},
		entries(profileURLs),
	)
})

// entries turns named cases into table entries.
func entries(cases []credentialURL) []TableEntry {
	out := make([]TableEntry, 0, len(cases))
	for _, c := range cases {
		out = append(out, Entry(c.name, c))
	}
	return out
}
