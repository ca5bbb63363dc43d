package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-catalog/operator/internal/controller"
	"github.com/mcp-catalog/operator/internal/fairqueue"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// Scale of the noisy-neighbour scenario (issue #20).
const (
	noisyServers = 32
	quietServers = 200
)

// BenchmarkScaleNoisyNeighbour runs two namespaces on the manager's default
// workers (16, one namespace at most 12): namespace "noisy" with 32 servers
// at a tarpit (a server that answers one byte a second) and the API's
// longest operationTimeout (5m), so that every operation against one holds
// its worker for five minutes; and namespace "quiet" with 200 healthy
// servers at the API's shortest health interval (5s). The tarpits are
// created first and take every worker their namespace may hold; then the
// quiet servers are created, and once each was contacted and the creation
// burst passed, a window of 12 intervals is watched as in
// BenchmarkScaleProbe: the quiet namespace's probes achieved against
// scheduled, and its worst lateness.
func BenchmarkScaleNoisyNeighbour(b *testing.B) {
	r := startEnvtest(b)
	tarpit := mcpserver.StartTarpit(b)
	p := startProbeTarget(b, quietServers)
	ctx := context.Background()
	share := fairqueue.DefaultMaxPerTenant(controller.DefaultMaxConcurrentServers)
	for b.Loop() {
		r.startManager(b)
		r.namespace(b, "noisy")
		for i := range noisyServers {
			s := mcpServer("noisy", fmt.Sprintf("tarpit-%02d", i), tarpit.URL, probeInterval)
			s.Spec.OperationTimeout = &metav1.Duration{Duration: 5 * time.Minute}
			if err := r.c.Create(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
		await(b, time.Minute, "the tarpits to hold their namespace's workers", func() bool { return tarpit.Open() >= share })

		r.namespace(b, "quiet")
		createStart := time.Now()
		createServers(b, r, "quiet", p, quietServers, probeInterval)
		await(b, 5*time.Minute, "every quiet server contacted", p.allContacted)
		firstContact := time.Since(createStart)
		time.Sleep(2 * probeInterval)

		window := 12 * probeInterval
		probesBefore := p.total.Load()
		start := time.Now()
		time.Sleep(window)
		end := time.Now()
		probes := p.total.Load() - probesBefore
		worst := p.worstLateness(start, end, probeInterval)
		scheduled := float64(quietServers) * window.Seconds() / (probeInterval.Seconds() * 1.05)

		b.ReportMetric(noisyServers, "noisy-servers")
		b.ReportMetric(quietServers, "quiet-servers")
		b.ReportMetric(probeInterval.Seconds(), "interval-s")
		b.ReportMetric(float64(share), "workers-per-namespace")
		b.ReportMetric(float64(tarpit.Open()), "noisy-workers-held")
		b.ReportMetric(float64(tarpit.MostOpen()), "noisy-workers-most")
		b.ReportMetric(firstContact.Seconds(), "quiet-first-contact-s")
		b.ReportMetric(float64(probes), "quiet-probes")
		b.ReportMetric(scheduled, "quiet-scheduled")
		b.ReportMetric(float64(probes)/scheduled, "quiet-achieved/scheduled")
		b.ReportMetric(worst.Seconds(), "quiet-worst-late-s")
		memory(b)
	}
}
