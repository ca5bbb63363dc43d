package cli

import (
	"context"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/mcp-catalog/operator/api/scheme"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// A watch the API server ends with 410 Gone (its resourceVersion is too
// old, after a long quiet watch) is not the end of --watch: the approvals
// are listed again, what the list holds is shown, and the watch resumes
// from the list's version.
func TestWatchApprovalsListsAgainAfterGone(t *testing.T) {
	waiting := &mcpv1alpha1.McpCallApproval{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "call-1"}}
	base := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(waiting).Build()
	first := watch.NewFake()
	var watches []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := interceptor.NewClient(base, interceptor.Funcs{
		Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
			o := &client.ListOptions{}
			o.ApplyOptions(opts)
			watches = append(watches, o.Raw.ResourceVersion)
			if len(watches) == 1 {
				return first, nil
			}
			// The resumed watch: the test is over.
			cancel()
			return watch.NewEmptyWatch(), nil
		},
	})
	gone := apierrors.NewResourceExpired("too old resource version")
	go first.Error(&gone.ErrStatus)

	var shown []string
	err := watchApprovals(ctx, c, []client.ListOption{client.InNamespace("team")}, "1", func(a *mcpv1alpha1.McpCallApproval) error {
		shown = append(shown, a.Name)
		return nil
	})
	if err != nil {
		t.Fatalf("watchApprovals ended with %v after a 410, want it to list again and go on", err)
	}
	if len(shown) != 1 || shown[0] != "call-1" {
		t.Errorf("shown %v after the relist, want the listed approval", shown)
	}
	if len(watches) != 2 || watches[0] != "1" || watches[1] == "1" {
		t.Errorf("watches from resourceVersions %v, want the first from 1 and the second from the list's", watches)
	}
	if gone.ErrStatus.Code != http.StatusGone {
		t.Fatalf("the test's error is not a 410: %d", gone.ErrStatus.Code)
	}
}
