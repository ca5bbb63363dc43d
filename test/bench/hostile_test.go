package bench

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// heapObjects is the runtime's count of bytes in heap objects, live or not
// yet collected: what the heap holds at this instant. Reading it does not
// stop the world, so it can be sampled often.
const heapObjects = "/memory/classes/heap/objects:bytes"

func readHeap(s []metrics.Sample) uint64 {
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapSampler records the largest heap seen between start and stop.
type heapSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

func sampleHeap(every time.Duration) *heapSampler {
	h := &heapSampler{stop: make(chan struct{})}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		s := []metrics.Sample{{Name: heapObjects}}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if v := readHeap(s); v > h.peak {
				h.peak = v
			}
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) finish() uint64 {
	close(h.stop)
	h.done.Wait()
	return h.peak
}

// BenchmarkScaleHostile runs the manager against a server that amplifies its
// catalog (100 pages near the 2 MiB read cap, every definition a deep schema
// whose nested descriptions survive normalisation; about 200 MiB offered
// under the API's default ceilings) and reports the manager's peak heap
// during that import above its idle heap. The import must end with
// CatalogTooLarge and write no McpTool.
//
// The server writes each page as it generates it and holds none, so the
// heap of this process is the manager's (and envtest's client's).
func BenchmarkScaleHostile(b *testing.B) {
	r := startEnvtest(b)
	srv := mcpserver.StartHostile(b, mcpserver.HostileOptions{})
	ctx := context.Background()
	r.startManager(b)

	for b.Loop() {
		r.namespace(b, "hostile")
		// Idle: the manager started, its caches synced, nothing to do.
		time.Sleep(2 * time.Second)
		runtime.GC()
		idle := readHeap([]metrics.Sample{{Name: heapObjects}})

		sampler := sampleHeap(2 * time.Millisecond)
		start := time.Now()
		s := mcpServer("hostile", "amplifier", srv.URL, 0)
		s.Spec.OperationTimeout = &metav1.Duration{Duration: 5 * time.Minute}
		if err := r.c.Create(ctx, s); err != nil {
			b.Fatal(err)
		}
		var reason string
		await(b, 10*time.Minute, "the import to fail", func() bool {
			var got mcpv1alpha1.McpServer
			if err := r.c.Get(ctx, client.ObjectKeyFromObject(s), &got); err != nil {
				return false
			}
			c := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionCatalogSynced)
			if c == nil || c.Status != metav1.ConditionFalse {
				return false
			}
			reason = c.Reason
			return true
		}, r.describe("hostile", "amplifier"))
		elapsed := time.Since(start)
		peak := sampler.finish()
		if reason != mcpv1alpha1.ReasonCatalogTooLarge {
			b.Fatalf("import failed with %s, want %s", reason, mcpv1alpha1.ReasonCatalogTooLarge)
		}
		var tools mcpv1alpha1.McpToolList
		if err := r.c.List(ctx, &tools, client.InNamespace("hostile")); err != nil {
			b.Fatal(err)
		}
		above := float64(peak) - float64(idle)
		b.ReportMetric(float64(idle)/(1<<20), "idle-heap-MiB")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(above/(1<<20), "peak-above-idle-MiB")
		b.ReportMetric(float64(srv.PagesServed()), "pages-read")
		b.ReportMetric(float64(srv.ToolsPerPage()*100), "tools-offered")
		b.ReportMetric(float64(len(tools.Items)), "tools-written")
		b.ReportMetric(elapsed.Seconds(), "import-s")
		if len(tools.Items) != 0 {
			b.Fatalf("%d McpTools written for a refused import", len(tools.Items))
		}
	}
	memory(b)
}
