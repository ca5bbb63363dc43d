package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

func TestResetMark(t *testing.T) {
	const ns = "agents"
	bot := "system:serviceaccount:" + ns + ":bot"
	mark := func(caller string) *mcpv1alpha1.McpReadMark {
		return &mcpv1alpha1.McpReadMark{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: governance.ReadMarkName(caller)}, Spec: mcpv1alpha1.McpReadMarkSpec{Caller: caller}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(mark(bot), mark("oidc:alice")).Build()
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(Streams{In: strings.NewReader(""), Out: &out, Err: &errb, NewKubeClient: func() (client.Client, string) { return c, ns }}, args)
		return code, out.String(), errb.String()
	}
	if code, _, errOut := run("reset-mark"); code != ExitUsage || !strings.Contains(errOut, "name the caller") {
		t.Fatalf("no caller: exit %d: %s", code, errOut)
	}
	if code, _, _ := run("reset-mark", "oidc:alice", "--service-account", "bot"); code != ExitUsage {
		t.Fatalf("both a user and a ServiceAccount: exit %d", code)
	}
	code, out, errOut := run("reset-mark", "--service-account", "bot")
	if code != 0 || !strings.Contains(out, bot) {
		t.Fatalf("reset of the ServiceAccount: exit %d: %s%s", code, out, errOut)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(mark(bot)), &mcpv1alpha1.McpReadMark{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the ServiceAccount's mark is still there: %v", err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(mark("oidc:alice")), &mcpv1alpha1.McpReadMark{}); err != nil {
		t.Fatalf("another caller's mark went too: %v", err)
	}
	if code, out, _ := run("reset-mark", "--service-account", "bot"); code != 0 || !strings.Contains(out, "has no read mark") {
		t.Fatalf("a second reset: exit %d: %s", code, out)
	}
	if code, out, _ := run("reset-mark", "oidc:alice"); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("reset of a person: exit %d: %s", code, out)
	}
}
