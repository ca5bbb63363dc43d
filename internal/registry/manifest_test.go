package registry

import (
	"encoding/json"
	"strings"
	"testing"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

func fuzzChoices() Choices {
	yes := true
	return Choices{Namespace: "ns", DataClass: mcpv1alpha1.DataClassInternal, ApprovalRequired: &yes}
}

func decodeRecorded[T any](t *testing.T, file string) *T {
	t.Helper()
	var v T
	if err := json.Unmarshal(recorded(t, file), &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestManifestOfARemoteServer(t *testing.T) {
	r := decodeRecorded[ServerResponse](t, "weather-latest.json")
	no := false
	d, err := Manifest("https://registry.modelcontextprotocol.io/", r, Choices{Namespace: "agents", DataClass: mcpv1alpha1.DataClassConfidential, ApprovalRequired: &no})
	if err != nil {
		t.Fatal(err)
	}
	s := d.Server
	if s.Name != "weather" || s.Namespace != "agents" || s.Kind != "McpServer" || s.APIVersion != mcpv1alpha1.GroupVersion.String() {
		t.Errorf("object %s/%s %s %s", s.Namespace, s.Name, s.APIVersion, s.Kind)
	}
	if s.Spec.URL != "https://api.example.com/mcp" || s.Spec.DataClass != mcpv1alpha1.DataClassConfidential || s.Spec.ApprovalRequired == nil || *s.Spec.ApprovalRequired {
		t.Errorf("spec %+v", s.Spec)
	}
	if s.Spec.Auth != nil || s.Spec.AllowPrivateNetwork || s.Spec.URLFrom != nil {
		t.Errorf("the draft asks for more than the entry: %+v", s.Spec)
	}
	want := map[string]string{
		mcpv1alpha1.AnnotationRegistryURL:     OfficialURL,
		mcpv1alpha1.AnnotationRegistryName:    "io.github.user/weather",
		mcpv1alpha1.AnnotationRegistryVersion: "1.0.2",
	}
	for k, v := range want {
		if s.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, s.Annotations[k], v)
		}
	}
	notes := strings.Join(d.Notes, "\n")
	if !strings.Contains(notes, "secret header X-API-Key") || !strings.Contains(notes, "SSE") {
		t.Errorf("notes:\n%s", notes)
	}
}

// Without the person's choices there is no draft, and the refusal says why:
// the registry does not prove who controls the URL.
func TestManifestNeedsThePersonsChoices(t *testing.T) {
	r := decodeRecorded[ServerResponse](t, "weather-latest.json")
	yes := true
	for name, c := range map[string]Choices{
		"no data class":      {ApprovalRequired: &yes},
		"unknown data class": {DataClass: "Secret", ApprovalRequired: &yes},
		"no approval choice": {DataClass: mcpv1alpha1.DataClassPublic},
	} {
		_, err := Manifest(OfficialURL, r, c)
		if !IsReason(err, ReasonChoiceMissing) || !strings.Contains(err.Error(), "does not prove who controls") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestManifestRefusesWhatItCannotImport(t *testing.T) {
	list := decodeRecorded[ServerList](t, "list-page-2.json")
	byName := map[string]*ServerResponse{}
	for i := range list.Servers {
		byName[list.Servers[i].Server.Name] = &list.Servers[i]
	}
	for name, want := range map[string]string{
		"com.example/demo-server":   "no streamable-http remote",
		"com.example/tenant-server": "template",
	} {
		_, err := Manifest(OfficialURL, byName[name], fuzzChoices())
		if !IsReason(err, ReasonNotImportable) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	d, err := Manifest(OfficialURL, byName["com.example/docs"], fuzzChoices())
	if err != nil || !strings.Contains(strings.Join(d.Notes, "\n"), "deprecated") {
		t.Errorf("a deprecated version is imported with a note: %v %v", err, d)
	}

	for url, want := range map[string]string{
		"https://api.example.com/mcp?api_key=" + canary:   "query",
		"https://user:" + canary + "@api.example.com/mcp": "user information",
		"ftp://api.example.com/mcp":                       "scheme",
		"https://api.example.com/mcp#" + canary:           "fragment",
		"https:///mcp":                                    "no host",
	} {
		r := &ServerResponse{Server: ServerDetail{Name: "a.b/c", Version: "1", Remotes: []Remote{{Type: TransportStreamableHTTP, URL: url}}}}
		_, err := Manifest(OfficialURL, r, fuzzChoices())
		if !IsReason(err, ReasonNotImportable) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), canary) {
			t.Errorf("%s: %v, want %q without the URL", url, err, want)
		}
	}
	bad := &ServerResponse{Server: ServerDetail{Name: "x/" + canary + "\x1b[2J", Version: "1"}}
	if _, err := Manifest(OfficialURL, bad, fuzzChoices()); !IsReason(err, ReasonNotImportable) || strings.Contains(err.Error(), canary) {
		t.Errorf("an invalid name: %v", err)
	}
	c := fuzzChoices()
	c.Name = "Not_A_Label"
	if _, err := Manifest(OfficialURL, byName["com.example/docs"], c); !IsReason(err, ReasonNotImportable) {
		t.Errorf("a bad --name: %v", err)
	}
	c = fuzzChoices()
	c.Remote = 3
	if _, err := Manifest(OfficialURL, byName["com.example/docs"], c); !IsReason(err, ReasonNotImportable) {
		t.Errorf("a remote that does not exist: %v", err)
	}
}

func TestDefaultName(t *testing.T) {
	long := "io.github.user/" + strings.Repeat("very-long-name-", 5)
	for in, want := range map[string]string{
		"io.github.user/weather":       "weather",
		"com.example/My_Server.v2":     "my-server-v2",
		"com.example/--x--":            "x",
		"com.example/___":              "server-" + DefaultName("com.example/___")[7:],
		long:                           DefaultName(long),
		"io.modelcontextprotocol/time": "time",
	} {
		got := DefaultName(in)
		if got != want || !validServerName(got) {
			t.Errorf("DefaultName(%q) = %q, want %q (a DNS label of at most 45)", in, got, want)
		}
	}
	if got := DefaultName(long); len(got) > 45 || !validServerName(got) || got == DefaultName("io.github.other/"+strings.Repeat("very-long-name-", 5)) {
		t.Errorf("long names: %q", got)
	}
}
