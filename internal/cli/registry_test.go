package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/registry"
	"github.com/mcp-catalog/operator/test/controlplane"
)

// recordedRegistry replays the registry's recorded v0.1 answers
// (internal/registry/testdata/recorded).
func recordedRegistry(t *testing.T) string {
	t.Helper()
	read := func(file string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "registry", "testdata", "recorded", file))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		file, status := "not-found.json", http.StatusNotFound
		switch p := r.URL.EscapedPath(); {
		case p == "/v0.1/servers" && r.URL.Query().Get("search") == "weather":
			file, status = "search-weather.json", http.StatusOK
		case p == "/v0.1/servers" && r.URL.Query().Get("cursor") == "":
			file, status = "list-page-1.json", http.StatusOK
		case p == "/v0.1/servers":
			file, status = "list-page-2.json", http.StatusOK
		case p == "/v0.1/servers/io.github.user%2Fweather/versions":
			file, status = "weather-versions.json", http.StatusOK
		case p == "/v0.1/servers/io.github.user%2Fweather/versions/latest":
			file, status = "weather-latest.json", http.StatusOK
		case p == "/v0.1/servers/io.github.user%2Fweather/versions/1.0.1":
			file, status = "weather-1.0.1.json", http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(read(file))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// runPlain runs kubectl-mcp without a cluster.
func runPlain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(Streams{In: strings.NewReader(""), Out: &out, Err: &errb, NewKubeClient: func() (client.Client, string) {
		t.Fatal("the command asked for a cluster")
		return nil, ""
	}}, args)
	return code, out.String(), errb.String()
}

func TestRegistrySearchAndShow(t *testing.T) {
	reg := recordedRegistry(t)

	code, out, errs := runPlain(t, "registry", "search", "--registry", reg)
	if code != ExitOK {
		t.Fatalf("search: %d %s", code, errs)
	}
	for _, want := range []string{"io.github.user/weather", "com.example/docs", "deprecated", "NAME"} {
		if !strings.Contains(out, want) {
			t.Errorf("search lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runPlain(t, "registry", "search", "weather", "--registry", reg, "-o", "json")
	var list struct {
		Items []registryServer `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != ExitOK || err != nil || len(list.Items) != 1 || list.Items[0].Importable != "yes" {
		t.Fatalf("search -o json: %d %v %s", code, err, out)
	}
	code, out, _ = runPlain(t, "registry", "search", "--registry", reg, "-o", "wide")
	if code != ExitOK || !strings.Contains(out, "no: the entry has no streamable-http remote") || !strings.Contains(out, "template") {
		t.Errorf("search -o wide says why a server is not importable:\n%s", out)
	}

	code, out, errs = runPlain(t, "registry", "show", "io.github.user/weather", "--registry", reg)
	if code != ExitOK {
		t.Fatalf("show: %d %s", code, errs)
	}
	for _, want := range []string{"header X-API-Key (required, secret)", "1.0.1 (deprecated)", "1.0.2 (latest, active)", "does not prove who controls", "sse https://mcp-fs.example.com/sse"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	code, _, errs = runPlain(t, "registry", "show", "com.example/nothing", "--registry", reg)
	if code != ExitFailed || !strings.Contains(errs, "registry search") {
		t.Errorf("show of an unknown server: %d %s", code, errs)
	}
	if code, _, errs = runPlain(t, "registry", "search", "--registry", "https://u:p@registry.example"); code != ExitUsage || strings.Contains(errs, "u:p") {
		t.Errorf("a registry URL with user information: %d %s", code, errs)
	}
}

// Strings from a registry reach the terminal without control characters.
func TestRegistryOutputHasNoControlCharacters(t *testing.T) {
	hostile := "safe\x1b[2J\x1b]0;pwned\a text\r\x1b[31mred\u202e\u009b1mend\x08"
	body, _ := json.Marshal(registry.ServerList{Servers: []registry.ServerResponse{{Server: registry.ServerDetail{
		Name: "com.example/hostile", Version: "1.0.0", Description: hostile, Title: hostile,
		Remotes: []registry.Remote{{Type: "streamable-http", URL: "https://x.example/mcp", Headers: []registry.Input{{Name: hostile, IsRequired: true}}}},
	}}}})
	one, _ := json.Marshal(registry.ServerResponse{Server: registry.ServerDetail{Name: "com.example/hostile", Version: "1.0.0", Description: hostile, Title: hostile,
		Remotes: []registry.Remote{{Type: "streamable-http", URL: "https://x.example/mcp", Headers: []registry.Input{{Name: hostile, IsRequired: true}}}}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/latest") {
			_, _ = w.Write(one)
			return
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	for _, args := range [][]string{{"registry", "search"}, {"registry", "show", "com.example/hostile"}, {"registry", "import", "com.example/hostile", "--data-class", "Public", "--approval", "required", "-o", "yaml"}} {
		_, out, errs := runPlain(t, append(args, "--registry", srv.URL)...)
		if args[1] == "import" {
			out = errs // the notes
		}
		if strings.ContainsAny(out, "\x1b\r\a\b\u202e\u009b") {
			t.Errorf("%s printed a control character: %q", args[1], out)
		}
		if !strings.Contains(out, "safe") {
			t.Errorf("%s lost the printable text: %q", args[1], out)
		}
	}
}

// Without the two choices only a person can make there is no import, and
// the refusal says why.
func TestRegistryImportNeedsDataClassAndApproval(t *testing.T) {
	reg := recordedRegistry(t)
	for _, args := range [][]string{
		{},
		{"--data-class", "Internal"},
		{"--approval", "required"},
	} {
		code, _, errs := runPlain(t, append([]string{"registry", "import", "io.github.user/weather", "--registry", reg, "-o", "yaml"}, args...)...)
		if code != ExitUsage || !strings.Contains(errs, "does not prove who controls") || !strings.Contains(errs, "required") {
			t.Errorf("%v: %d %s", args, code, errs)
		}
	}
	for _, args := range [][]string{
		{"--data-class", "Secret", "--approval", "required"},
		{"--data-class", "Internal", "--approval", "maybe"},
	} {
		if code, _, errs := runPlain(t, append([]string{"registry", "import", "io.github.user/weather", "--registry", reg, "-o", "yaml"}, args...)...); code != ExitUsage {
			t.Errorf("%v: %d %s", args, code, errs)
		}
	}
	code, _, errs := runPlain(t, "registry", "import", "com.example/demo-server", "--registry", reg, "--data-class", "Public", "--approval", "required", "-o", "yaml")
	if code != ExitFailed {
		t.Errorf("a server the registry does not hold: %d %s", code, errs)
	}
}

// The import's manifest is one a real API server accepts, created or
// printed for GitOps; a newer version is reported and never applied.
func TestRegistryImportOnARealAPIServer(t *testing.T) {
	reg := recordedRegistry(t)
	cfg := controlplane.Start(t).Config
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "registry-"}}
	if err := c.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(Streams{In: strings.NewReader(""), Out: &out, Err: &errb, NewKubeClient: func() (client.Client, string) { return c, ns }}, append(args, "--registry", reg))
		return code, out.String(), errb.String()
	}

	t.Run("-o yaml prints a manifest the API server accepts", func(t *testing.T) {
		code, out, errs := runPlain(t, "registry", "import", "io.github.user/weather", "--registry", reg, "--data-class", "Confidential", "--approval", "not-required", "-o", "yaml")
		if code != ExitOK {
			t.Fatalf("%d %s", code, errs)
		}
		if !strings.Contains(errs, "secret header X-API-Key") {
			t.Errorf("the notes do not name the header the remote asks for: %s", errs)
		}
		if strings.Contains(out, "status") || strings.Contains(out, "creationTimestamp") || strings.Contains(out, "namespace") {
			t.Errorf("the manifest carries more than a GitOps repository wants:\n%s", out)
		}
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(out), &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace(ns)
		if err := c.Create(ctx, &u, client.DryRunAll); err != nil {
			t.Fatalf("the API server refuses the manifest: %v\n%s", err, out)
		}
		if dc, _, _ := unstructured.NestedString(u.Object, "spec", "dataClass"); dc != "Confidential" {
			t.Errorf("dataClass %q", dc)
		}
		if a, _, _ := unstructured.NestedBool(u.Object, "spec", "approvalRequired"); a {
			t.Error("approvalRequired is not the chosen false")
		}
		var got mcpv1alpha1.McpServer
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "weather"}, &got); err == nil {
			t.Error("a dry run stored the object")
		}
	})

	t.Run("import creates it once and never replaces it", func(t *testing.T) {
		code, out, errs := run("registry", "import", "io.github.user/weather", "--data-class", "Internal", "--approval", "required")
		if code != ExitOK || !strings.Contains(out, "mcpserver.mcp.catalog.dev/weather created") {
			t.Fatalf("%d %s %s", code, out, errs)
		}
		var s mcpv1alpha1.McpServer
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "weather"}, &s); err != nil {
			t.Fatal(err)
		}
		if s.Spec.URL != "https://api.example.com/mcp" || s.Spec.DataClass != mcpv1alpha1.DataClassInternal || s.Spec.ApprovalRequired == nil || !*s.Spec.ApprovalRequired || s.Spec.Auth != nil {
			t.Errorf("spec %+v", s.Spec)
		}
		if s.Annotations[mcpv1alpha1.AnnotationRegistryName] != "io.github.user/weather" || s.Annotations[mcpv1alpha1.AnnotationRegistryVersion] != "1.0.2" || s.Annotations[mcpv1alpha1.AnnotationRegistryURL] != reg {
			t.Errorf("annotations %v", s.Annotations)
		}
		code, _, errs = run("registry", "import", "io.github.user/weather", "--data-class", "Public", "--approval", "not-required")
		if code != ExitFailed || !strings.Contains(errs, "already exists") {
			t.Errorf("a second import: %d %s", code, errs)
		}
		var again mcpv1alpha1.McpServer
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "weather"}, &again); err != nil || again.Spec.DataClass != mcpv1alpha1.DataClassInternal {
			t.Errorf("the second import changed the object: %v %+v", err, again.Spec)
		}
		code, out, _ = run("registry", "import", "io.github.user/weather", "--name", "weather-named", "--data-class", "Public", "--approval", "required", "-o", "name")
		if code != ExitOK || strings.TrimSpace(out) != "mcpserver.mcp.catalog.dev/weather-named" {
			t.Errorf("-o name: %d %q", code, out)
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "weather-named"}, &again); err != nil {
			t.Errorf("-o name did not create the object: %v", err)
		}
		code, out, errs = run("registry", "import", "io.github.user/weather", "--name", "weather-dry", "--data-class", "Public", "--approval", "required", "--dry-run=server")
		if code != ExitOK || !strings.Contains(out, "server dry run") {
			t.Errorf("--dry-run=server: %d %s %s", code, out, errs)
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "weather-dry"}, &again); err == nil {
			t.Error("--dry-run=server stored the object")
		}
	})

	t.Run("outdated reports a newer version and applies nothing", func(t *testing.T) {
		if code, out, errs := run("registry", "import", "io.github.user/weather", "--version", "1.0.1", "--name", "weather-old", "--data-class", "Internal", "--approval", "required"); code != ExitOK {
			t.Fatalf("%d %s %s", code, out, errs)
		}
		other := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "elsewhere", Annotations: map[string]string{
			mcpv1alpha1.AnnotationRegistryURL: "https://registry.example.internal", mcpv1alpha1.AnnotationRegistryName: "com.example/x", mcpv1alpha1.AnnotationRegistryVersion: "1.0.0",
		}}, Spec: mcpv1alpha1.McpServerSpec{URL: "https://x.example/mcp", DataClass: mcpv1alpha1.DataClassPublic}}
		if err := c.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		var before mcpv1alpha1.McpServer
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "weather-old"}, &before); err != nil {
			t.Fatal(err)
		}
		code, out, errs := run("registry", "outdated", "-o", "json")
		if code != ExitOK {
			t.Fatalf("%d %s", code, errs)
		}
		var list struct {
			Items []versionCheck `json:"items"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		got := map[string]versionCheck{}
		for _, it := range list.Items {
			got[it.Name] = it
		}
		if r := got["weather-old"]; r.Result != "NewerAvailable" || r.Version != "1.0.1" || r.Latest != "1.0.2" {
			t.Errorf("weather-old: %+v", r)
		}
		if r := got["weather"]; r.Result != "Current" || r.Latest != "1.0.2" {
			t.Errorf("weather: %+v", r)
		}
		if r := got["elsewhere"]; r.Result != "OtherRegistry" {
			t.Errorf("elsewhere: %+v", r)
		}
		var after mcpv1alpha1.McpServer
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "weather-old"}, &after); err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion {
			t.Error("outdated changed the McpServer")
		}
		code, out, _ = run("registry", "outdated")
		if code != ExitOK || !strings.Contains(out, "NewerAvailable") {
			t.Errorf("the table: %s", out)
		}
	})
}

func TestCompareVersions(t *testing.T) {
	v := func(version, status string, latest bool) registry.ServerResponse {
		return registry.ServerResponse{Server: registry.ServerDetail{Version: version},
			Meta: &registry.ResponseMeta{Official: &registry.OfficialMeta{Status: status, IsLatest: latest, StatusMessage: "use 2"}}}
	}
	for _, c := range []struct {
		recorded string
		versions []registry.ServerResponse
		latest   string
		result   string
	}{
		{"1.0.1", []registry.ServerResponse{v("1.0.2", "active", true), v("1.0.1", "active", false)}, "1.0.2", "NewerAvailable"},
		{"1.0.2", []registry.ServerResponse{v("1.0.2", "active", true)}, "1.0.2", "Current"},
		// A recorded version newer than the registry's latest is not outdated.
		{"2.0.0", []registry.ServerResponse{v("1.9.0", "active", true)}, "1.9.0", "Current"},
		{"1.0.0", []registry.ServerResponse{v("1.0.0", "deprecated", true)}, "1.0.0", "Deprecated"},
		{"1.0.0", []registry.ServerResponse{v("1.0.0", "deleted", true)}, "1.0.0", "Deleted"},
		{"2025-01", []registry.ServerResponse{v("2025-02", "active", true)}, "2025-02", "NewerAvailable"},
		{"1.0.0", nil, "", "NotFound"},
	} {
		latest, result, _ := compareVersions(c.recorded, c.versions)
		if latest != c.latest || result != c.result {
			t.Errorf("%s: %s %s, want %s %s", c.recorded, latest, result, c.latest, c.result)
		}
	}
}
