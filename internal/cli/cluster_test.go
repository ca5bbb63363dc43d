package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/controller"
	"github.com/mcp-catalog/operator/internal/review"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/poll"
	"github.com/mcp-catalog/operator/test/testenv"
)

// clusterEnv is a control plane with the operator running, for the
// commands that talk to a cluster.
type clusterEnv struct {
	c   client.Client
	cfg *rest.Config
	ns  string
}

func startCluster(t *testing.T) *clusterEnv {
	t.Helper()
	cfg := controlplane.Start(t).Config
	testenv.RunManager(t, cfg, testenv.ManagerOptions())
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cli-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return &clusterEnv{c: c, cfg: cfg, ns: ns.Name}
}

func (e *clusterEnv) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(Streams{In: strings.NewReader(""), Out: &out, Err: &errb, NewKubeClient: func() (client.Client, string) { return e.c, e.ns }}, args)
	return code, out.String(), errb.String()
}

func (e *clusterEnv) server(t *testing.T, name, url string) {
	t.Helper()
	s := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Spec: mcpv1alpha1.McpServerSpec{
		URL: url, DataClass: mcpv1alpha1.DataClassInternal, AllowPrivateNetwork: true,
		OperationTimeout: &metav1.Duration{Duration: 3 * time.Second},
	}}
	if err := e.c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func (e *clusterEnv) tool(t *testing.T, name string) *mcpv1alpha1.McpTool {
	t.Helper()
	var tool mcpv1alpha1.McpTool
	poll.Until(t, 30*time.Second, "McpTool "+name+" imported", func() error {
		if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &tool); err != nil {
			return err
		}
		if tool.Status.DefinitionHash == "" {
			return errors.New("no definition hash in its status yet")
		}
		return nil
	})
	return &tool
}

func TestClusterCommands(t *testing.T) {
	e := startCluster(t)
	up := mcpserver.Start(t, mcpserver.Options{Tools: 3})
	e.server(t, "good", up.URL)
	// A port nobody listens on: the import is refused with Unreachable.
	e.server(t, "down", "http://127.0.0.1:1/mcp")
	e.tool(t, "good.echo")

	t.Run("enable, approve and disable prompts and resources by kind/name", func(t *testing.T) {
		feat := mcpserver.StartFeatures(t, 16)
		e.server(t, "feat", feat.URL)
		// The other subtests see the namespace's servers: this one's goes.
		defer func() {
			srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "feat"}}
			if err := e.c.Delete(context.Background(), srv); err != nil {
				t.Error(err)
			}
			poll.Until(t, time.Minute, "McpServer feat deleted", func() error {
				if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(srv), srv); err == nil {
					return errors.New("still there")
				}
				return nil
			})
		}()
		prompt, err := toolname.ObjectName("feat", mcpserver.PromptReview)
		if err != nil {
			t.Fatal(err)
		}
		var p mcpv1alpha1.McpPrompt
		poll.Until(t, time.Minute, "McpPrompt "+prompt+" imported", func() error {
			if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: prompt}, &p); err != nil {
				return err
			}
			if p.Status.DefinitionHash == "" {
				return errors.New("no definition hash yet")
			}
			return nil
		})
		if code, out, errOut := e.run(t, "enable", "mcpprompt/"+prompt); code != ExitOK || !strings.Contains(out, "mcpprompt/"+prompt+" enabled") {
			t.Fatalf("enable: exit %d, out %s, err %s", code, out, errOut)
		}
		// Without a hash, approve shows the definition and approves nothing.
		code, out, _ := e.run(t, "approve", "mcpprompt/"+prompt)
		if code != ExitFailed || !strings.Contains(out, p.Status.DefinitionHash) || !strings.Contains(out, "prompt:      "+mcpserver.PromptReview) ||
			!strings.Contains(out, "argument:    language (required)") {
			t.Fatalf("approve without a hash: exit %d, out %s", code, out)
		}
		other := "sha256:" + strings.Repeat("0", 64)
		if code, _, errOut := e.run(t, "approve", "mcpprompt/"+prompt, "--hash", other); code != ExitFailed || !strings.Contains(errOut, "the current definition is "+p.Status.DefinitionHash) {
			t.Fatalf("approve of a definition not current: exit %d, err %s", code, errOut)
		}
		if code, out, errOut := e.run(t, "approve", "mcpp/"+prompt, "--hash", p.Status.DefinitionHash); code != ExitOK || !strings.Contains(out, "approved "+p.Status.DefinitionHash) {
			t.Fatalf("approve: exit %d, out %s, err %s", code, out, errOut)
		}
		if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: prompt}, &p); err != nil {
			t.Fatal(err)
		}
		if !p.Spec.Enabled || p.Spec.ApprovedDefinitionHash != p.Status.DefinitionHash {
			t.Fatalf("after enable and approve: enabled %t, approved %q of %q", p.Spec.Enabled, p.Spec.ApprovedDefinitionHash, p.Status.DefinitionHash)
		}
		// A changed definition is shown as changed, with the import's
		// explanation of how.
		approved := p.Status.DefinitionHash
		feat.SetPrompt("Reviews code for bugs and for style.")
		if code, _, errOut := e.run(t, "import", "feat"); code != ExitOK {
			t.Fatalf("import: exit %d: %s", code, errOut)
		}
		poll.Until(t, time.Minute, "the changed prompt imported", func() error {
			if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: prompt}, &p); err != nil {
				return err
			}
			if p.Status.DefinitionHash == approved {
				return errors.New("still the approved definition")
			}
			return nil
		})
		code, out, _ = e.run(t, "approve", "mcpprompt/"+prompt)
		if code != ExitFailed || !strings.Contains(out, "CHANGED since it was approved") || !strings.Contains(out, "What changed since "+approved) ||
			!strings.Contains(out, "and for style.") {
			t.Fatalf("approve of a changed prompt without a hash: exit %d, out %s", code, out)
		}
		readme := controller.ResourceObjectName("feat", mcpserver.ResourceReadme, "")
		poll.Until(t, time.Minute, "McpResource "+readme+" imported", func() error {
			var r mcpv1alpha1.McpResource
			return e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: readme}, &r)
		})
		if code, out, errOut := e.run(t, "enable", "mcpresource/"+readme, "mcpresource/nope"); code != ExitFailed || !strings.Contains(out, "mcpresource/"+readme+" enabled") ||
			!strings.Contains(errOut, "McpResource nope not found") {
			t.Fatalf("enable of one resource and one missing: exit %d, out %s, err %s", code, out, errOut)
		}
		if code, _, errOut := e.run(t, "disable", "mcpr/"+readme); code != ExitOK {
			t.Fatalf("disable: exit %d: %s", code, errOut)
		}
		var r mcpv1alpha1.McpResource
		if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: readme}, &r); err != nil || r.Spec.Enabled {
			t.Fatalf("the resource is still enabled (%v)", err)
		}
	})

	t.Run("import --all reports every server and fails when one refuses", func(t *testing.T) {
		before := up.Stats().Methods["tools/list"]
		code, out, errOut := e.run(t, "import", "--all", "-o", "json")
		if code != ExitFailed {
			t.Fatalf("exit %d, want %d (one server refuses); stderr %s", code, ExitFailed, errOut)
		}
		var list resultListOf[printedResult]
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out)
		}
		got := map[string]requestResult{}
		for _, r := range list.Items {
			if r.Kind != "ImportResult" || r.APIVersion != ResultGroupVersion || r.Metadata.Namespace != e.ns {
				t.Errorf("item %+v", r.printed)
			}
			got[r.Metadata.Name] = r.requestResult
		}
		if r := got["good"]; r.Result != "Succeeded" || r.Tools == nil || *r.Tools != int32(3+len(mcpserver.BuiltinTools())) {
			t.Errorf("good: %+v", r)
		}
		if r := got["down"]; r.Result != "Failed" || r.Reason != mcpv1alpha1.ReasonUnreachable {
			t.Errorf("down: %+v", r)
		}
		if up.Stats().Methods["tools/list"] <= before {
			t.Errorf("the import request did not reach the server")
		}
	})

	t.Run("import NAME of a good server exits 0", func(t *testing.T) {
		code, out, errOut := e.run(t, "import", "good")
		if code != ExitOK || !strings.Contains(out, "Succeeded") {
			t.Errorf("exit %d, out %s, err %s", code, out, errOut)
		}
	})

	t.Run("import of a missing server fails without waiting", func(t *testing.T) {
		code, out, _ := e.run(t, "import", "nope", "--timeout", "5s")
		if code != ExitFailed || !strings.Contains(out, "no such McpServer in this namespace (check -n/--namespace)") {
			t.Errorf("exit %d, out %s", code, out)
		}
	})

	t.Run("test probes now and prints the latency", func(t *testing.T) {
		code, out, errOut := e.run(t, "test", "good", "-o", "json")
		var rows resultListOf[printedResult]
		if code != ExitOK || json.Unmarshal([]byte(out), &rows) != nil || len(rows.Items) != 1 || rows.Items[0].Kind != "TestResult" || rows.Items[0].Latency == "" {
			t.Errorf("exit %d, out %s, err %s", code, out, errOut)
		}
	})

	t.Run("enable, tools and disable", func(t *testing.T) {
		if code, out, errOut := e.run(t, "enable", "good/echo"); code != ExitOK || !strings.Contains(out, "good.echo enabled") {
			t.Fatalf("enable: exit %d, out %s, err %s", code, out, errOut)
		}
		if tool := e.tool(t, "good.echo"); !tool.Spec.Enabled {
			t.Fatalf("good.echo is not enabled")
		}
		code, out, _ := e.run(t, "tools", "--mcp-server", "good", "-o", "json")
		var list resultListOf[mcpv1alpha1.McpTool]
		if code != ExitOK || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("tools: exit %d, out %s", code, out)
		}
		enabled := 0
		for _, r := range list.Items {
			if r.Spec.Enabled {
				enabled++
				if r.Name != "good.echo" || r.Status.LocalName != "mcp_good_echo" {
					t.Errorf("unexpected enabled tool %s (%s)", r.Name, r.Status.LocalName)
				}
			}
		}
		if enabled != 1 || len(list.Items) != 3+len(mcpserver.BuiltinTools()) {
			t.Errorf("tools lists %d McpTools, %d enabled", len(list.Items), enabled)
		}
		if code, _, errOut := e.run(t, "disable", "good.echo"); code != ExitOK {
			t.Fatalf("disable: exit %d: %s", code, errOut)
		}
		if tool := e.tool(t, "good.echo"); tool.Spec.Enabled {
			t.Errorf("good.echo is still enabled")
		}
	})

	t.Run("tools SERVER prints McpTool objects in every format", func(t *testing.T) {
		want := 3 + len(mcpserver.BuiltinTools())
		if code, _, errOut := e.run(t, "enable", "good.echo"); code != ExitOK {
			t.Fatalf("enable: %s", errOut)
		}
		defer e.run(t, "disable", "good.echo")
		code, out, errOut := e.run(t, "tools", "good", "-o", "yaml")
		var list resultListOf[mcpv1alpha1.McpTool]
		if code != ExitOK || yaml.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("tools good -o yaml: exit %d: %s %s", code, out, errOut)
		}
		if list.Kind != "List" || len(list.Items) != want {
			t.Fatalf("tools good -o yaml: %s with %d items", list.Kind, len(list.Items))
		}
		for _, it := range list.Items {
			if it.APIVersion != mcpv1alpha1.GroupVersion.String() || it.Kind != "McpTool" || it.Spec.ServerRef.Name != "good" || len(it.ManagedFields) != 0 {
				t.Errorf("item %s: %s %s of %s, %d managed fields", it.Name, it.APIVersion, it.Kind, it.Spec.ServerRef.Name, len(it.ManagedFields))
			}
		}
		code, out, _ = e.run(t, "tools", "good", "-o", "name")
		names := strings.Fields(out)
		if code != ExitOK || len(names) != want || !slices.Contains(names, "mcptool.mcp.catalog.dev/good.echo") {
			t.Errorf("-o name: exit %d: %v", code, names)
		}
		code, out, _ = e.run(t, "tools", "good", "-o", `jsonpath={range .items[?(@.spec.enabled==true)]}{.metadata.name}{"\n"}{end}`)
		if code != ExitOK || out != "good.echo\n" {
			t.Errorf("-o jsonpath of the enabled tools: exit %d: %q", code, out)
		}
		code, out, _ = e.run(t, "tools", "good", "-o", "custom-columns=NAME:.metadata.name,ENABLED:.spec.enabled,LOCAL:.status.localName")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != ExitOK || len(lines) != want+1 || !slices.Contains(lines[1:], fieldsLine("good.echo true mcp_good_echo", lines[1:])) {
			t.Errorf("-o custom-columns: exit %d:\n%s", code, out)
		}
		_, table, _ := e.run(t, "tools", "good")
		_, wide, _ := e.run(t, "tools", "good", "-o", "wide")
		if !strings.HasPrefix(table, "NAMESPACE") || strings.Contains(table, "REMOTE NAME") || !strings.Contains(wide, "REMOTE NAME") {
			t.Errorf("table:\n%s\nwide:\n%s", table, wide)
		}
		// The argument and the flag select the same tools.
		_, byFlag, _ := e.run(t, "tools", "--mcp-server", "good", "-o", "name")
		if !slices.Equal(strings.Fields(byFlag), names) {
			t.Errorf("--mcp-server good lists %q, the argument %v", byFlag, names)
		}
	})

	t.Run("tools of a server not in the namespace names -n", func(t *testing.T) {
		code, _, errOut := e.run(t, "tools", "nope")
		if code != ExitFailed || !strings.Contains(errOut, "McpServer nope not found in namespace "+e.ns+": check -n/--namespace") {
			t.Errorf("exit %d: %s", code, errOut)
		}
		code, _, errOut = e.run(t, "enable", "nope.x")
		if code != ExitFailed || !strings.Contains(errOut, "not found in namespace "+e.ns+": check -n/--namespace") {
			t.Errorf("enable: exit %d: %s", code, errOut)
		}
	})

	t.Run("completion offers the names the API server has", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want []string
		}{
			{[]string{"__complete", "import", ""}, []string{"down", "good"}},
			{[]string{"__complete", "test", "good", ""}, []string{"down"}},
			{[]string{"__complete", "tools", "g"}, []string{"good"}},
			{[]string{"__complete", "tools", "good", ""}, nil},
		} {
			code, out, errOut := e.run(t, c.args...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code != ExitOK || len(lines) == 0 || lines[len(lines)-1] != ":4" {
				t.Errorf("%v: exit %d, out %q, err %s", c.args, code, out, errOut)
				continue
			}
			if got := lines[:len(lines)-1]; !slices.Equal(got, c.want) && (len(got) != 0 || len(c.want) != 0) {
				t.Errorf("%v: completed %v, want %v", c.args, got, c.want)
			}
		}
		_, out, _ := e.run(t, "__complete", "enable", "good.e")
		if got := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(got, []string{"good.echo", ":4"}) {
			t.Errorf("enable good.e completes to %v", got)
		}
		// Another namespace has no such servers.
		_, out, _ = e.run(t, "__complete", "import", "-n", "default", "")
		if strings.TrimSpace(out) != ":4" {
			t.Errorf("import -n default completes to %q", out)
		}
	})

	t.Run("enable -o name and -o json print the changed McpTool", func(t *testing.T) {
		code, out, errOut := e.run(t, "enable", "good/echo", "-o", "name")
		if code != ExitOK || out != "mcptool.mcp.catalog.dev/good.echo\n" {
			t.Errorf("enable -o name: exit %d: %q %s", code, out, errOut)
		}
		code, out, _ = e.run(t, "disable", "good.echo", "-o", "json")
		var list resultListOf[mcpv1alpha1.McpTool]
		if code != ExitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != 1 || list.Items[0].Spec.Enabled {
			t.Errorf("disable -o json: exit %d: %s", code, out)
		}
	})

	t.Run("a field Git owns is not taken without --force", func(t *testing.T) {
		gitops := mcpac.McpTool("good.fail", e.ns).WithSpec(mcpac.McpToolSpec().
			WithServerRef(mcpac.LocalObjectReference().WithName("good")).WithRemoteName("fail").WithEnabled(false))
		if err := e.c.Apply(context.Background(), gitops, client.FieldOwner("argocd-controller")); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := e.run(t, "enable", "good.fail")
		if code != ExitFailed || !strings.Contains(errOut, "another manager owns this field") {
			t.Fatalf("enable of a Git-owned field: exit %d, stderr %s", code, errOut)
		}
		if tool := e.tool(t, "good.fail"); tool.Spec.Enabled {
			t.Fatalf("the Git-owned field was changed")
		}
		if code, _, errOut := e.run(t, "enable", "good.fail", "--force"); code != ExitOK {
			t.Fatalf("enable --force: exit %d: %s", code, errOut)
		}
	})

	t.Run("describe-as sets the text agents read and keeps the server's for reviewers", func(t *testing.T) {
		if code, _, errOut := e.run(t, "describe-as", "good.slow", "--description", "Waits.", "--parameter", "seconds=How long to wait, at most 5."); code != ExitOK {
			t.Fatalf("describe-as: exit %d: %s", code, errOut)
		}
		// A later flag replaces its field and keeps what kubectl mcp set before.
		if code, out, errOut := e.run(t, "describe-as", "good.slow", "--title", "Wait"); code != ExitOK || out != "mcptool/good.slow reviewed text set\n" {
			t.Fatalf("describe-as --title: exit %d: %q %s", code, out, errOut)
		}
		tool := e.tool(t, "good.slow")
		want := mcpv1alpha1.ReviewedText{Title: "Wait", Description: "Waits.", Parameters: []mcpv1alpha1.ParameterText{{Name: "seconds", Description: "How long to wait, at most 5."}}}
		if tool.Spec.ReviewedText == nil || !reflect.DeepEqual(*tool.Spec.ReviewedText, want) {
			t.Fatalf("spec.reviewedText = %+v, want %+v", tool.Spec.ReviewedText, want)
		}
		if !strings.HasPrefix(tool.Status.Description, "Blocks until cancelled") {
			t.Errorf("status.description = %q, want the server's own", tool.Status.Description)
		}
		owned := false
		for _, mf := range tool.ManagedFields {
			owned = owned || (mf.Manager == review.FieldManager && strings.Contains(mf.FieldsV1.String(), `"f:reviewedText"`))
		}
		if !owned {
			t.Errorf("%s does not own spec.reviewedText", review.FieldManager)
		}

		code, out, _ := e.run(t, "describe-as", "good.slow")
		if code != ExitOK || !strings.Contains(out, "Agents read:") || !strings.Contains(out, "How long to wait, at most 5.") ||
			!strings.Contains(out, "The server wrote") || !strings.Contains(out, "Blocks until cancelled") {
			t.Errorf("describe-as without flags: exit %d:\n%s", code, out)
		}
		if code, out, _ := e.run(t, "diff", "good.slow"); code != ExitOK || !strings.Contains(out, "Agents read reviewed text") {
			t.Errorf("diff does not say agents read reviewed text: exit %d:\n%s", code, out)
		}

		// Text of an argument the server's schema does not have would make
		// the tool unservable: refused, and nothing written.
		code, _, errOut := e.run(t, "describe-as", "good.slow", "--parameter", "minutes=How many minutes.")
		if code != ExitFailed || !strings.Contains(errOut, `parameter "minutes"`) {
			t.Errorf("describe-as of an unknown parameter: exit %d: %s", code, errOut)
		}
		if got := e.tool(t, "good.slow").Spec.ReviewedText; len(got.Parameters) != 1 {
			t.Errorf("a refused change was written: %+v", got)
		}
		if code, _, errOut := e.run(t, "describe-as", "good.slow", "--parameter", "seconds"); code != ExitUsage {
			t.Errorf("--parameter without text: exit %d: %s", code, errOut)
		}

		if code, _, errOut := e.run(t, "describe-as", "good.slow", "--clear"); code != ExitOK {
			t.Fatalf("describe-as --clear: %s", errOut)
		}
		if got := e.tool(t, "good.slow").Spec.ReviewedText; got != nil {
			t.Errorf("--clear left %+v", got)
		}
	})

	t.Run("describe-as does not take reviewed text Git declares without --force", func(t *testing.T) {
		gitops := mcpac.McpTool("good.echo", e.ns).WithSpec(mcpac.McpToolSpec().
			WithServerRef(mcpac.LocalObjectReference().WithName("good")).WithRemoteName("echo").
			WithReviewedText(mcpac.ReviewedText().WithDescription("Returns the text it is given.")))
		if err := e.c.Apply(context.Background(), gitops, client.FieldOwner("argocd-controller")); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := e.run(t, "describe-as", "good.echo", "--description", "Echoes.")
		if code != ExitFailed || !strings.Contains(errOut, "another manager owns this field") {
			t.Fatalf("describe-as of Git's text: exit %d: %s", code, errOut)
		}
		if got := e.tool(t, "good.echo").Spec.ReviewedText.Description; got != "Returns the text it is given." {
			t.Fatalf("Git's text was changed to %q", got)
		}
		if code, _, errOut := e.run(t, "describe-as", "good.echo", "--description", "Echoes.", "--force"); code != ExitOK {
			t.Fatalf("describe-as --force: %s", errOut)
		}
	})

	t.Run("approve takes only the definition the person reviewed", func(t *testing.T) {
		if code, _, errOut := e.run(t, "enable", "good/image_and_text"); code != ExitOK {
			t.Fatalf("enable: %s", errOut)
		}
		reviewed := e.tool(t, "good.image-and-text")
		// Enabling approves nothing; a person approves the definition first.
		if code, _, errOut := e.run(t, "approve", "good.image-and-text", "--hash", reviewed.Status.DefinitionHash); code != ExitOK {
			t.Fatalf("approve the first definition: %s", errOut)
		}
		if err := up.SetToolDescription("image_and_text", "a changed description"); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := e.run(t, "import", "good"); code != ExitOK {
			t.Fatalf("import: %s", errOut)
		}
		tool := e.tool(t, "good.image-and-text")
		if tool.Status.DefinitionHash == reviewed.Status.DefinitionHash {
			t.Fatalf("the import did not change the definition")
		}

		// Without --hash nothing is approved; the review shows the change,
		// the current definition and the hash to pass.
		code, out, _ := e.run(t, "approve", "good.image-and-text")
		if code != ExitFailed {
			t.Errorf("approve without --hash: exit %d, want %d", code, ExitFailed)
		}
		// It is a line diff from the approved text, which the import kept.
		oldLine := "-  " + strings.Split(review.Printable(reviewed.Status.Description, true), "\n")[0]
		for _, want := range []string{"CHANGED", "+  a changed description", oldLine, "--hash " + tool.Status.DefinitionHash, "approved " + reviewed.Status.DefinitionHash,
			"What changed since " + reviewed.Status.DefinitionHash + ": TextChanged", "  TextChanged description: changed"} {
			if !strings.Contains(out, want) {
				t.Errorf("the review does not show %q:\n%s", want, out)
			}
		}
		if got := e.tool(t, "good.image-and-text").Spec.ApprovedDefinitionHash; got != reviewed.Status.DefinitionHash {
			t.Fatalf("approve without --hash changed the approval to %q", got)
		}

		// The hash reviewed before the change is refused.
		code, _, errOut := e.run(t, "approve", "good.image-and-text", "--hash", reviewed.Status.DefinitionHash)
		if code != ExitFailed || !strings.Contains(errOut, "changed since it was reviewed") {
			t.Errorf("approve of a stale hash: exit %d, stderr %s", code, errOut)
		}
		if got := e.tool(t, "good.image-and-text").Spec.ApprovedDefinitionHash; got != reviewed.Status.DefinitionHash {
			t.Fatalf("a refused approval changed the approval to %q", got)
		}
		if code, _, errOut := e.run(t, "approve", "good.image-and-text", "--hash", "sha256:abc"); code != ExitUsage {
			t.Errorf("a malformed hash: exit %d, stderr %s", code, errOut)
		}

		// The hash diff shows is approved.
		code, out, errOut = e.run(t, "diff", "good.image-and-text", "-o", "json")
		var r review.Review
		if code != ExitOK || json.Unmarshal([]byte(out), &r) != nil || !r.Changed || r.CurrentHash != tool.Status.DefinitionHash {
			t.Fatalf("diff: exit %d, out %s, err %s", code, out, errOut)
		}
		if r.Approved == nil || r.Approved.Hash != reviewed.Status.DefinitionHash || r.Approved.Description != reviewed.Status.Description || !strings.Contains(r.Diff, "+  a changed description") {
			t.Errorf("diff -o json does not carry the approved text and the line diff: %s", out)
		}
		if r.Drift == nil || r.Drift.FromHash != reviewed.Status.DefinitionHash || r.Drift.ToHash != r.CurrentHash ||
			len(r.Drift.Categories) != 1 || r.Drift.Categories[0] != "TextChanged" {
			t.Errorf("diff -o json does not carry the drift the importer recorded: %+v", r.Drift)
		}
		code, out, errOut = e.run(t, "approve", "good.image-and-text", "--hash", r.CurrentHash)
		if code != ExitOK || !strings.Contains(out, r.CurrentHash) {
			t.Fatalf("approve: exit %d, out %s, err %s", code, out, errOut)
		}
		tool = e.tool(t, "good.image-and-text")
		if tool.Spec.ApprovedDefinitionHash != tool.Status.DefinitionHash {
			t.Errorf("approved %q, current %q", tool.Spec.ApprovedDefinitionHash, tool.Status.DefinitionHash)
		}
		// Approving kept the enablement this plugin applied before, and
		// enabling again keeps the approval: one field manager, both fields.
		if !tool.Spec.Enabled {
			t.Error("approving turned the tool's enabled off")
		}
		if code, _, errOut := e.run(t, "enable", "good.image-and-text"); code != ExitOK {
			t.Fatalf("enable after approve: exit %d, %s", code, errOut)
		}
		if tool = e.tool(t, "good.image-and-text"); tool.Spec.ApprovedDefinitionHash != tool.Status.DefinitionHash || !tool.Spec.Enabled {
			t.Errorf("after enable: enabled %t, approved %q, current %q", tool.Spec.Enabled, tool.Spec.ApprovedDefinitionHash, tool.Status.DefinitionHash)
		}
		if code, out, _ := e.run(t, "diff", "good.image-and-text"); code != ExitOK || !strings.Contains(out, "is the approved one") {
			t.Errorf("diff after approval: exit %d, out %s", code, out)
		}
	})

	t.Run("effects records a review of the current definition, and it is in force once approved", func(t *testing.T) {
		tool := e.tool(t, "good.image-and-text")
		code, out, _ := e.run(t, "effects", "good.image-and-text")
		if code != ExitFailed || !strings.Contains(out, "In force: unreviewed") || !strings.Contains(out, "--hash "+tool.Status.DefinitionHash) {
			t.Fatalf("effects without --hash: exit %d, out %s", code, out)
		}
		if code, _, _ := e.run(t, "effects", "good.image-and-text", "--hash", tool.Status.DefinitionHash, "--read-only", "--destructive"); code != ExitUsage {
			t.Errorf("read-only and destructive: exit %d, want %d", code, ExitUsage)
		}
		stale := "sha256:" + strings.Repeat("0", 64)
		if code, _, errOut := e.run(t, "effects", "good.image-and-text", "--hash", stale, "--read-only"); code != ExitFailed || !strings.Contains(errOut, "kubectl mcp diff") {
			t.Errorf("effects of a definition that is not current: exit %d, %s", code, errOut)
		}
		if code, _, errOut := e.run(t, "effects", "good.image-and-text", "--hash", tool.Status.DefinitionHash, "--read-only", "--open-world=false"); code != ExitOK {
			t.Fatalf("effects: %s", errOut)
		}
		tool = e.tool(t, "good.image-and-text")
		r := tool.Spec.ReviewedEffects
		if r == nil || r.DefinitionHash != tool.Status.DefinitionHash || r.ReadOnly == nil || !*r.ReadOnly || r.OpenWorld == nil || *r.OpenWorld || r.Destructive != nil || r.Idempotent != nil {
			t.Fatalf("spec.reviewedEffects = %+v, want read-only and closed-world for the current definition, the rest unset", r)
		}
		if !tool.Spec.Enabled || tool.Spec.ApprovedDefinitionHash != tool.Status.DefinitionHash {
			t.Errorf("recording effects changed the enablement or approval: enabled %t, approved %q", tool.Spec.Enabled, tool.Spec.ApprovedDefinitionHash)
		}
		if _, out, _ := e.run(t, "effects", "good.image-and-text"); !strings.Contains(out, "In force: reviewed as read-only, closed-world") {
			t.Errorf("effects shows %s", out)
		}
	})

	t.Run("an approval racing a new definition is refused by the API server", func(t *testing.T) {
		read := e.tool(t, "good.echo")
		reviewed := read.Status.DefinitionHash
		if err := up.SetToolDescription("echo", "echo, redefined between read and write"); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := e.run(t, "import", "good"); code != ExitOK {
			t.Fatalf("import: %s", errOut)
		}
		if e.tool(t, "good.echo").Status.DefinitionHash == reviewed {
			t.Fatalf("the import did not change the definition")
		}
		// The write made from the earlier read: its hash check passes on
		// that read, so only the precondition can stop it.
		err := review.ApproveIfCurrent(context.Background(), e.c, read, reviewed, false)
		if !errors.Is(err, review.ErrStale) {
			t.Fatalf("approve from a stale read: %v, want ErrStale", err)
		}
		if got := e.tool(t, "good.echo").Spec.ApprovedDefinitionHash; got != "" {
			t.Fatalf("the stale approval was written: %q", got)
		}
		// Retried on a fresh read, the hash check refuses it.
		err = review.Approve(context.Background(), e.c, e.ns, "good.echo", reviewed, false)
		if !errors.Is(err, review.ErrDefinitionChanged) {
			t.Fatalf("approve after a fresh read: %v, want ErrDefinitionChanged", err)
		}
	})

	t.Run("tools shows the hash to approve", func(t *testing.T) {
		want := e.tool(t, "good.echo").Status.DefinitionHash
		code, out, _ := e.run(t, "tools", "good", "-o", "wide")
		if code != ExitOK || !strings.Contains(out, "DEFINITION") || !strings.Contains(out, want) {
			t.Errorf("tools -o wide does not show %s for good.echo: exit %d\n%s", want, code, out)
		}
		code, out, _ = e.run(t, "tools", "good", "-o", "jsonpath={.items[?(@.metadata.name==\"good.echo\")].status.definitionHash}")
		if code != ExitOK || out != want {
			t.Errorf("tools -o jsonpath shows %q for good.echo, want %q", out, want)
		}
	})

	t.Run("strings from the server reach the terminal without control characters", func(t *testing.T) {
		// The importer refuses such definitions, so the status is written
		// here directly: the CLI must not rely on the importer for it.
		hostile := "safe\x1b[2J\x1b]0;pwned\a text\r\x1b[31mred\u202e\u009b1mend\x08"
		decl := mcpac.McpTool("good.hostile", e.ns).WithSpec(mcpac.McpToolSpec().
			WithServerRef(mcpac.LocalObjectReference().WithName("good")).WithRemoteName("hostile"))
		if err := e.c.Apply(context.Background(), decl, client.FieldOwner("argocd-controller")); err != nil {
			t.Fatal(err)
		}
		var tool mcpv1alpha1.McpTool
		if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "good.hostile"}, &tool); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(tool.DeepCopy())
		tool.Status.Description, tool.Status.Title = hostile, hostile
		tool.Status.DefinitionHash = "sha256:" + strings.Repeat("ab", 32)
		tool.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"q":{"type":"string","description":"\u001b[2Jwiped"}}}`)}
		if err := e.c.Status().Patch(context.Background(), &tool, patch); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"diff", "good.hostile"}, {"approve", "good.hostile"}} {
			_, out, _ := e.run(t, args...)
			if strings.ContainsAny(out, "\x1b\r\a\b\u202e\u009b") {
				t.Errorf("%s printed a control character: %q", args[0], out)
			}
			if !strings.Contains(out, "safe") || !strings.Contains(out, "red") || !strings.Contains(out, "wiped") {
				t.Errorf("%s lost the printable text: %q", args[0], out)
			}
		}
	})

	t.Run("approve and enable take the name agents see", func(t *testing.T) {
		if code, out, errOut := e.run(t, "enable", "mcp_good_slow"); code != ExitOK || !strings.Contains(out, "mcptool/good.slow enabled") {
			t.Fatalf("enable mcp_good_slow: exit %d, out %s, err %s", code, out, errOut)
		}
		tool := e.tool(t, "good.slow")
		if !tool.Spec.Enabled {
			t.Fatal("good.slow is not enabled")
		}
		code, out, _ := e.run(t, "approve", "mcp_good_slow")
		if code != ExitFailed || !strings.Contains(out, "kubectl mcp approve mcp_good_slow -n "+e.ns+" --hash "+tool.Status.DefinitionHash) {
			t.Errorf("approve mcp_good_slow without --hash: exit %d, want the review and the command, in that name:\n%s", code, out)
		}
		if code, out, errOut := e.run(t, "approve", "mcp_good_slow", "--hash", tool.Status.DefinitionHash); code != ExitOK || !strings.Contains(out, "mcptool/good.slow approved") {
			t.Fatalf("approve mcp_good_slow: exit %d, out %s, err %s", code, out, errOut)
		}
		if tool := e.tool(t, "good.slow"); tool.Spec.ApprovedDefinitionHash != tool.Status.DefinitionHash {
			t.Errorf("good.slow approved %q, want %q", tool.Spec.ApprovedDefinitionHash, tool.Status.DefinitionHash)
		}
		// A tool another namespace shares is its owner's to enable.
		if code, _, errOut := e.run(t, "approve", "mcps_other_slow"); code != ExitUsage || !strings.Contains(errOut, "owner") {
			t.Errorf("approve of a shared tool's name: exit %d: %s", code, errOut)
		}
	})

	t.Run("a name that matches no tool offers the near ones, in the form it was given", func(t *testing.T) {
		hash := e.tool(t, "good.slow").Status.DefinitionHash
		for _, tc := range []struct {
			args []string
			near string
		}{
			{[]string{"enable", "mcp_good_slw"}, "did you mean mcp_good_slow?"},
			{[]string{"disable", "good/slo"}, "did you mean good/slow?"},
			{[]string{"approve", "good.slwo", "--hash", hash}, "did you mean good.slow?"},
			{[]string{"approve", "mcp_good_ehco"}, "did you mean mcp_good_echo?"},
			{[]string{"diff", "good.fial"}, "did you mean good.fail?"},
			{[]string{"enable", "mcp_good_nothing_like_any"}, ""},
		} {
			code, _, errOut := e.run(t, tc.args...)
			if code != ExitFailed || !strings.Contains(errOut, "not found in namespace "+e.ns) {
				t.Errorf("%v: exit %d, want %d and not found: %s", tc.args, code, ExitFailed, errOut)
			}
			if tc.near == "" && strings.Contains(errOut, "did you mean") || !strings.Contains(errOut, tc.near) {
				t.Errorf("%v: %s, want %q", tc.args, errOut, tc.near)
			}
		}
	})

	t.Run("tools in a consuming namespace lists the tools shared with it", func(t *testing.T) {
		ctx := context.Background()
		consumer := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cli-consumer-"}}
		if err := e.c.Create(ctx, consumer); err != nil {
			t.Fatal(err)
		}
		srv := &mcpv1alpha1.McpServer{}
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "good"}, srv); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(srv.DeepCopy())
		srv.Spec.Sharing = &mcpv1alpha1.ServerSharing{Namespaces: []string{consumer.Name}}
		if err := e.c.Patch(ctx, srv, patch); err != nil {
			t.Fatal(err)
		}
		shared := &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: consumer.Name, Name: "from-good"}, Spec: mcpv1alpha1.McpSharedServerSpec{
			Server: mcpv1alpha1.SharedServerReference{Namespace: e.ns, Name: "good"}, DisabledTools: []string{"fail"},
		}}
		if err := e.c.Create(ctx, shared); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 30*time.Second, "the McpSharedServer Ready", func() error {
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(shared), shared); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(shared.Status.Conditions, mcpv1alpha1.ConditionReady) {
				return fmt.Errorf("conditions %+v", shared.Status.Conditions)
			}
			return nil
		})
		echo := e.tool(t, "good.echo")
		code, out, errOut := e.run(t, "tools", "-n", consumer.Name)
		if code != ExitOK {
			t.Fatalf("tools -n %s: exit %d: %s", consumer.Name, code, errOut)
		}
		lines := strings.Split(out, "\n")
		wantEcho := fmt.Sprintf("%s %s/good.echo mcps_from-good_echo %t Internal true", consumer.Name, e.ns, echo.Spec.Enabled)
		if l := fieldsLine(wantEcho, lines); !strings.HasPrefix(strings.Join(strings.Fields(l), " "), wantEcho) || !strings.Contains(out, "mcps_from-good_echo") {
			t.Errorf("tools in the consumer does not list the shared echo as %q:\n%s", wantEcho, out)
		}
		var fail string
		for _, l := range lines {
			if strings.Contains(l, "mcps_from-good_fail") {
				fail = l
			}
		}
		if f := strings.Fields(fail); len(f) < 8 || f[3] != "false" || f[7] != mcpv1alpha1.ReasonDisabledByConsumer {
			t.Errorf("the tool the consumer disabled reads %q", fail)
		}
		if n := strings.Count(out, "mcps_from-good_"); n < 3+len(mcpserver.BuiltinTools()) {
			t.Errorf("%d shared tools listed, want every tool of good:\n%s", n, out)
		}
		// The owner's own listing is unchanged: no shared rows there.
		if _, out, _ := e.run(t, "tools"); strings.Contains(out, "mcps_") {
			t.Errorf("the owner's namespace lists shared names:\n%s", out)
		}
	})
}

// printedResult is an ImportResult or TestResult as printed.
type printedResult struct {
	printed
	requestResult
}

// fieldsLine returns the line of lines whose whitespace-separated fields
// are those of want, or want itself when none is.
func fieldsLine(want string, lines []string) string {
	for _, l := range lines {
		if strings.Join(strings.Fields(l), " ") == want {
			return l
		}
	}
	return want
}
