package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

// writeLog records, per object, which shard's manager wrote it and how
// often: the evidence that no object has two writers.
type writeLog struct {
	mu      sync.Mutex
	writers map[string]map[string]int // object path (status folded in) -> shard -> writes
}

type shardTransport struct {
	log   *writeLog
	shard string
	next  http.RoundTripper
}

func (t *shardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		obj := strings.TrimSuffix(req.URL.Path, "/status")
		named := true
		if req.Method == http.MethodPost {
			// A create goes to the collection; the object is named in the
			// body. Leader election creates its lease in protobuf, which is
			// not decoded here: the leases are named by the two distinct
			// election IDs, and their updates (PUT, by name) are tallied.
			name := createdName(req)
			obj += "/" + name
			named = name != ""
		}
		// Events are created, never updated, and name no object of ours.
		if named && !strings.Contains(obj, "/events") {
			t.log.mu.Lock()
			if t.log.writers[obj] == nil {
				t.log.writers[obj] = map[string]int{}
			}
			t.log.writers[obj][t.shard]++
			t.log.mu.Unlock()
		}
	}
	return t.next.RoundTrip(req)
}

// createdName reads metadata.name from a create's JSON body, or "".
func createdName(req *http.Request) string {
	if req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	var o struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if json.NewDecoder(body).Decode(&o) != nil || o.Metadata.Name == "" {
		return ""
	}
	return o.Metadata.Name
}

// tally counts objects written by more than one shard, and writes by a
// shard to a McpServer or McpTool of another (owner says whose an object
// path is; "" for objects owned by nobody in particular, such as leases).
func (l *writeLog) tally(b *testing.B, owner func(path string) string) (shared, foreign int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for path, by := range l.writers {
		if len(by) > 1 {
			shared++
			b.Logf("written by both shards: %s %v", path, by)
		}
		if o := owner(path); o != "" {
			for shard, n := range by {
				if shard != o {
					foreign += n
				}
			}
		}
	}
	return shared, foreign
}

// BenchmarkScaleShards runs two controller shards on one control plane, as
// the chart's sharding.shards does: shard "a" selects McpServers labelled
// sharding.mcp.catalog.dev/key=a, the default instance everything without
// the label, each with its own leader-election lease. Half of BENCH_SERVERS
// (1,000) servers at the 5 s minimum interval are labelled for shard a; one
// catalog server per shard is imported too, so that tools follow their
// server. After a window of 12 intervals it reports probes achieved against
// scheduled (twice the schedule would mean both shards probe a server), the
// objects written by both shards, and the writes a shard made to the other
// shard's McpServers and McpTools. Both must be zero.
func BenchmarkScaleShards(b *testing.B) {
	n := scaleServers()
	r := startEnvtest(b)
	p := startProbeTarget(b, n)
	catalog := mcpserver.Start(b, mcpserver.Options{Tools: 20})
	log := &writeLog{writers: map[string]map[string]int{}}
	shardCfg := func(shard string) *rest.Config {
		cfg := rest.CopyConfig(r.cfg)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &shardTransport{log: log, shard: shard, next: rt} })
		return cfg
	}
	ctx := context.Background()
	for b.Loop() {
		for shard, selector := range map[string]string{
			"a":       mcpv1alpha1.LabelShardKey + "=a",
			"default": "!" + mcpv1alpha1.LabelShardKey,
		} {
			startManager(b, shardCfg(shard), func(o *manager.Options) {
				o.Components = manager.ComponentsControllers
				o.WatchLabelSelector = selector
				o.LeaderElect, o.LeaderElectionNamespace = true, "default"
				o.LeaderElectionID = shard + "." + manager.LeaderElectionID
			})
		}
		r.namespace(b, "shards")
		inShardA := func(i int) bool { return i%2 == 0 }
		g := make(chan error, n)
		sem := make(chan struct{}, 16)
		for i := range n {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				s := mcpServer("shards", fmt.Sprintf("s%04d", i), p.serverURL(i), probeInterval)
				if inShardA(i) {
					s.Labels = map[string]string{mcpv1alpha1.LabelShardKey: "a"}
				}
				g <- r.c.Create(ctx, s)
			}()
		}
		for range n {
			if err := <-g; err != nil {
				b.Fatal(err)
			}
		}
		catA := mcpServer("shards", "cat-a", catalog.URL, 0)
		catA.Labels = map[string]string{mcpv1alpha1.LabelShardKey: "a"}
		for _, s := range []*mcpv1alpha1.McpServer{catA, mcpServer("shards", "cat-default", catalog.URL, 0)} {
			if err := r.c.Create(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
		await(b, 10*time.Minute, "every server contacted and both catalogs imported", func() bool {
			p.mu.Lock()
			for _, t := range p.times {
				if len(t) == 0 {
					p.mu.Unlock()
					return false
				}
			}
			p.mu.Unlock()
			var tools mcpv1alpha1.McpToolList
			if r.c.List(ctx, &tools, client.InNamespace("shards")) != nil {
				return false
			}
			return len(tools.Items) == 2*(20+len(mcpserver.BuiltinTools()))
		})
		time.Sleep(2 * probeInterval)

		window := 12 * probeInterval
		start := time.Now()
		time.Sleep(window)
		end := time.Now()
		// Probes in the window, per half: each half is probed by one shard
		// at its schedule; a half probed by both would show about twice it.
		var probesA, probesDefault int
		p.mu.Lock()
		for i, ts := range p.times {
			for _, t := range ts {
				if t.After(start) && !t.After(end) {
					if inShardA(i) {
						probesA++
					} else {
						probesDefault++
					}
				}
			}
		}
		p.mu.Unlock()
		halfA := float64((n + 1) / 2)
		perServer := window.Seconds() / (probeInterval.Seconds() * 1.05)

		// Tools follow their server's shard.
		var tools mcpv1alpha1.McpToolList
		if err := r.c.List(ctx, &tools, client.InNamespace("shards")); err != nil {
			b.Fatal(err)
		}
		mislabelled := 0
		toolShard := map[string]string{}
		for _, t := range tools.Items {
			want, shard := "", "default"
			if t.Spec.ServerRef.Name == "cat-a" {
				want, shard = "a", "a"
			}
			if t.Labels[mcpv1alpha1.LabelShardKey] != want {
				mislabelled++
			}
			toolShard[t.Name] = shard
		}
		owner := func(path string) string {
			_, rest, ok := strings.Cut(path, "/namespaces/shards/")
			if !ok {
				return ""
			}
			kind, name, _ := strings.Cut(rest, "/")
			switch kind {
			case "mcpservers":
				if name == "cat-a" {
					return "a"
				}
				var i int
				if _, err := fmt.Sscanf(name, "s%04d", &i); err == nil && inShardA(i) {
					return "a"
				}
				return "default"
			case "mcptools":
				return toolShard[name]
			}
			return ""
		}
		shared, foreign := log.tally(b, owner)

		b.ReportMetric(float64(n), "servers")
		b.ReportMetric(float64(probesA)/(halfA*perServer), "shard-a-achieved/scheduled")
		b.ReportMetric(float64(probesDefault)/((float64(n)-halfA)*perServer), "shard-default-achieved/scheduled")
		b.ReportMetric(float64(shared), "objects-written-by-both")
		b.ReportMetric(float64(foreign), "writes-to-other-shard")
		b.ReportMetric(float64(mislabelled), "tools-not-following-server")
	}
}
