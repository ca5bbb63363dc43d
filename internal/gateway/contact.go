package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// DefaultContactInterval is how often, at most, one gateway replica writes
// one McpServer's last contact. A server called all the time costs one
// status write per replica per interval, not one per call; its recorded
// contact is at most one interval old.
const DefaultContactInterval = 30 * time.Second

// contactWriteTimeout bounds one status write; a failure is logged and
// never reaches the call.
const contactWriteTimeout = 10 * time.Second

// Contacts records that a call to a server completed, and how long it
// took, in the server's status (lastContactTime, lastContactLatency), as
// probes and imports do. Writes are coalesced per server: the first
// contact after a quiet interval is written at once, later ones within the
// interval are kept and the latest is written when the interval ends.
type Contacts struct {
	// Client patches McpServer status.
	Client   client.Client
	Interval time.Duration

	mu      sync.Mutex
	servers map[types.NamespacedName]*contactState
}

type contactState struct {
	lastWrite time.Time
	pending   *contact
	timer     bool
}

type contact struct {
	at      time.Time
	latency time.Duration
}

func (c *Contacts) interval() time.Duration {
	if c.Interval > 0 {
		return c.Interval
	}
	return DefaultContactInterval
}

// Record notes a completed contact with server. It never blocks on the API
// server.
func (c *Contacts) Record(ctx context.Context, server types.NamespacedName, at time.Time, latency time.Duration) {
	log := logf.FromContext(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers == nil {
		c.servers = map[types.NamespacedName]*contactState{}
	}
	st := c.servers[server]
	if st == nil {
		st = &contactState{}
		c.servers[server] = st
	}
	ct := &contact{at: at, latency: latency}
	now := time.Now()
	if wait := c.interval() - now.Sub(st.lastWrite); wait > 0 {
		st.pending = ct
		if !st.timer {
			st.timer = true
			time.AfterFunc(wait, func() { c.flush(log, server) })
		}
		return
	}
	st.lastWrite = now
	go c.write(log, server, ct)
}

func (c *Contacts) flush(log logr.Logger, server types.NamespacedName) {
	c.mu.Lock()
	st := c.servers[server]
	ct := st.pending
	st.pending, st.timer = nil, false
	if ct == nil {
		c.mu.Unlock()
		return
	}
	st.lastWrite = time.Now()
	c.mu.Unlock()
	c.write(log, server, ct)
}

// write merge-patches the two fields only: no read, no conflict with the
// controller's own status writes.
func (c *Contacts) write(log logr.Logger, server types.NamespacedName, ct *contact) {
	ctx, cancel := context.WithTimeout(context.Background(), contactWriteTimeout)
	defer cancel()
	t := metav1.NewTime(ct.at.Truncate(time.Second))
	body, err := json.Marshal(map[string]any{"status": map[string]any{
		"lastContactTime":    t,
		"lastContactLatency": metav1.Duration{Duration: ct.latency.Round(time.Millisecond)},
	}})
	if err != nil {
		return
	}
	srv := &mcpv1alpha1.McpServer{}
	srv.Namespace, srv.Name = server.Namespace, server.Name
	if err := c.Client.Status().Patch(ctx, srv, client.RawPatch(types.MergePatchType, body)); err != nil {
		log.Error(err, "gateway: recording the server's last contact failed", "server", server.String())
	}
}
