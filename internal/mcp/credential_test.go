package mcp

import (
	"net/http"
	"testing"

	"github.com/mcp-catalog/operator/internal/secret"
)

// attachCredential is the last check before the secret is revealed; requests
// only ever go to the endpoint URL, so its host rule is exercised directly.
func TestAttachCredential(t *testing.T) {
	c := New(Options{})
	mk := func(url string, insecure bool, header string) *operation {
		o, err := c.begin(Endpoint{Name: "n", URL: url, AllowInsecureCredential: insecure,
			Credential: &Credential{Header: header, Value: secret.New("v")}})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	cases := []struct {
		name       string
		op         *operation
		reqURL     string
		header     string
		want       string
		refusedFor Kind
	}{
		{"same host bearer", mk("https://a.test/mcp", false, ""), "https://a.test/mcp", "Authorization", "Bearer v", ""},
		{"same origin, default port spelled out", mk("https://a.test/mcp", false, ""), "https://A.test:443/other", "Authorization", "Bearer v", ""},
		{"named header", mk("https://a.test/mcp", false, "X-Token"), "https://a.test/mcp", "X-Token", "v", ""},
		{"other host", mk("https://a.test/mcp", false, ""), "https://b.test/mcp", "Authorization", "", KindInsecureCredential},
		{"other port", mk("https://a.test/mcp", false, ""), "https://a.test:8443/mcp", "Authorization", "", KindInsecureCredential},
		{"scheme downgrade", mk("https://a.test/mcp", false, ""), "http://a.test:443/mcp", "Authorization", "", KindInsecureCredential},
		{"plain http opted in", mk("http://a.test/mcp", true, ""), "http://a.test/mcp", "Authorization", "Bearer v", ""},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(http.MethodPost, tc.reqURL, nil)
		err := tc.op.attachCredential(req, "tools/call")
		if KindOf(err) != tc.refusedFor {
			t.Errorf("%s: err %v, want kind %q", tc.name, err, tc.refusedFor)
		}
		if got := req.Header.Get(tc.header); got != tc.want {
			t.Errorf("%s: %s = %q, want %q", tc.name, tc.header, got, tc.want)
		}
	}
}
