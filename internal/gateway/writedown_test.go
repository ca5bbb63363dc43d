package gateway

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
)

// markCache is a Reader of McpReadMarks as the informer cache serves them
// with readOnly: the stored object itself, no copy.
type markCache struct {
	client.Reader
	marks map[types.NamespacedName]*mcpv1alpha1.McpReadMark
}

func (c *markCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	m, ok := c.marks[key]
	if !ok {
		return notFound(key.Name)
	}
	*obj.(*mcpv1alpha1.McpReadMark) = *m
	return nil
}

// countingMarks is the API server's side of McpReadMarks: it counts every
// request and serves what markCache holds.
type countingMarks struct {
	client.Client
	cache    *markCache
	requests atomic.Int64
	writes   atomic.Int64
}

func (c *countingMarks) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.requests.Add(1)
	return c.cache.Get(ctx, key, obj, opts...)
}

func (c *countingMarks) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	c.requests.Add(1)
	c.writes.Add(1)
	m := obj.(*mcpv1alpha1.McpReadMark)
	c.cache.marks[client.ObjectKeyFromObject(m)] = m.DeepCopy()
	return nil
}

func (c *countingMarks) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.Create(ctx, obj)
}

func notFound(name string) error {
	return apierrors.NewNotFound(mcpv1alpha1.GroupVersion.WithResource("mcpreadmarks").GroupResource(), name)
}

// writeDownScope is a gateway whose marks live in a markCache, and the
// scope of a call by bot of team, held to the write-down rule, of a tool
// of class with the given review.
func writeDownScope(t testing.TB, class mcpv1alpha1.DataClass, openWorld bool, rule *mcpv1alpha1.WriteDownRule) (*Gateway, *countingMarks, *authn.Identity, *callScope) {
	t.Helper()
	cache := &markCache{marks: map[types.NamespacedName]*mcpv1alpha1.McpReadMark{}}
	api := &countingMarks{cache: cache}
	o := completeOptions()
	o.Reader, o.Marks = cache, api
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	id := &authn.Identity{Username: "system:serviceaccount:team:bot", Namespace: "team", ServiceAccount: "bot"}
	tl := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "crm.lookup"}, Spec: mcpv1alpha1.McpToolSpec{ApprovedDefinitionHash: hashA}}
	if !openWorld {
		no := false
		tl.Spec.ReviewedEffects = &mcpv1alpha1.ReviewedEffects{DefinitionHash: hashA, OpenWorld: &no}
	}
	policies := []mcpv1alpha1.McpAccessPolicy{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "bot"},
		Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"bot"}, MaxDataClass: mcpv1alpha1.DataClassConfidential, WriteDown: rule},
	}}
	c := &callScope{key: client.ObjectKeyFromObject(tl), obs: &callObs{}, tool: tl, policies: policies, class: class,
		rec: audit.Record{CallID: "c", Caller: id.Username, Namespace: "team", Tool: tl.Name, LocalName: "mcp_crm_lookup"}}
	return g, api, id, c
}

// The stage in one replica: a read raises the mark once, a read that does
// not raise it writes nothing, and the mark holds back an open-world call
// and a lower-class call, naming the read, never a value; RequireApproval
// makes the call need approval instead.
func TestWriteDownStage(t *testing.T) {
	ctx := context.Background()
	rule := &mcpv1alpha1.WriteDownRule{Action: mcpv1alpha1.WriteDownRefuse, Window: &metav1.Duration{Duration: time.Hour}}
	g, api, id, read := writeDownScope(t, mcpv1alpha1.DataClassConfidential, false, rule)
	if answer := g.holdWriteDown(ctx, id, read); answer != nil {
		t.Fatalf("the first read was held back: %s", textOfResult(answer))
	}
	if !g.raiseMark(ctx, id, read) || api.writes.Load() != 1 || read.rec.WriteDown != writeDownRaised {
		t.Fatalf("the first read: %d writes, record %q", api.writes.Load(), read.rec.WriteDown)
	}
	before := api.requests.Load()
	for range 3 {
		if answer := g.holdWriteDown(ctx, id, read); answer != nil {
			t.Fatalf("a closed-world read of the same class was held back: %s", textOfResult(answer))
		}
		if !g.raiseMark(ctx, id, read) {
			t.Fatal("raising failed")
		}
	}
	if n := api.requests.Load() - before; n != 0 {
		t.Fatalf("reads that do not raise the mark made %d API requests", n)
	}

	for _, tc := range []struct {
		name      string
		class     mcpv1alpha1.DataClass
		openWorld bool
		want      string
	}{
		{"open-world", mcpv1alpha1.DataClassRestricted, true, "it is open-world"},
		{"a lower class", mcpv1alpha1.DataClassInternal, false, "its data class (Internal) is lower"},
	} {
		_, _, _, c := writeDownScope(t, tc.class, tc.openWorld, rule)
		answer := g.holdWriteDown(ctx, id, c)
		if answer == nil {
			t.Fatalf("%s: not held back", tc.name)
		}
		txt := textOfResult(answer)
		for _, want := range []string{tc.want, "received Confidential data from the tool mcp_crm_lookup at "} {
			if !strings.Contains(txt, want) {
				t.Errorf("%s: %q does not say %q", tc.name, txt, want)
			}
		}
		if c.rec.WriteDown != writeDownRefused || c.rec.MarkTool != "mcp_crm_lookup" || c.rec.MarkClass != "Confidential" || c.rec.MarkReadAt == "" {
			t.Errorf("%s: record %+v", tc.name, c.rec)
		}
	}

	asks := &mcpv1alpha1.WriteDownRule{Action: mcpv1alpha1.WriteDownRequireApproval}
	_, _, _, c := writeDownScope(t, mcpv1alpha1.DataClassPublic, true, asks)
	if answer := g.holdWriteDown(ctx, id, c); answer != nil || !c.approval || c.rec.WriteDown != writeDownApproval {
		t.Fatalf("RequireApproval: answer %v, approval %v, record %q", answer, c.approval, c.rec.WriteDown)
	}
}

// A mark that cannot be written withholds the result.
func TestWriteDownWithholdsWhatItCannotRecord(t *testing.T) {
	g, _, id, c := writeDownScope(t, mcpv1alpha1.DataClassConfidential, false, &mcpv1alpha1.WriteDownRule{})
	g.Marks = failingMarks{}
	if g.raiseMark(context.Background(), id, c) || c.rec.WriteDown != writeDownUnrecorded {
		t.Fatalf("a failed write raised the mark: record %q", c.rec.WriteDown)
	}
}

type failingMarks struct{ client.Client }

func (failingMarks) Create(context.Context, client.Object, ...client.CreateOption) error {
	return errors.New("the API server is unreachable (test)")
}

// BenchmarkWriteDownStage is what the write-down rule adds to a call of a
// caller it holds whose mark does not rise: the decide stage's check and
// the record stage's, against the cache, with no API request.
func BenchmarkWriteDownStage(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		rule *mcpv1alpha1.WriteDownRule
	}{
		{"no rule", nil},
		{"rule, mark held", &mcpv1alpha1.WriteDownRule{Window: &metav1.Duration{Duration: time.Hour}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g, api, id, c := writeDownScope(b, mcpv1alpha1.DataClassConfidential, false, bc.rule)
			g.raiseMark(ctx, id, c)
			before := api.requests.Load()
			b.ReportAllocs()
			for b.Loop() {
				if g.holdWriteDown(ctx, id, c) != nil || !g.raiseMark(ctx, id, c) {
					b.Fatal("held back")
				}
			}
			b.ReportMetric(float64(api.requests.Load()-before)/float64(b.N), "api-requests/op")
		})
	}
}
