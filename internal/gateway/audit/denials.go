package audit

import (
	"sync"
	"time"
)

// DefaultDenialWindow is how long repeats of a denial are aggregated into
// one record.
const DefaultDenialWindow = time.Minute

// maxDenialWindows bounds the open windows. Keys are made of what review
// and the cache vouch for (an identity, an McpTool that exists, a fixed
// reason), not of what a caller sends; should they still fill the table,
// a denial without room is written on its own, as before.
const maxDenialWindows = 10000

// denialKey is what makes two Denials the same: who, which tool, why. The
// name a caller sent and the arguments are left out, so a caller cannot
// make each denial new by varying them.
type denialKey struct {
	caller, namespace, tool, server, dataClass, reason, detail string
	// approvalName tells apart calls waiting on different McpCallApprovals
	// (objects the gateway made, not names a caller sent).
	approvalName string
	// serverNamespace and sharedServer name a shared tool's owner and the
	// caller's McpSharedServer, so that an aggregate names both namespaces.
	serverNamespace, sharedServer string
}

func keyOf(r Record) denialKey {
	return denialKey{r.Caller, r.Namespace, r.Tool, r.Server, r.DataClass, r.Reason, r.Detail, r.ApprovalName, r.ServerNamespace, r.SharedServer}
}

// denialWindow is an open window: since start, repeats Denials of its key
// were not written.
type denialWindow struct {
	start   time.Time
	repeats int
}

// Denials aggregates repeated identical Denials, so that a caller repeating
// a refused request cannot write to the audit sink as fast as it sends.
// The first denial of a key is always written, and opens a window; repeats
// within it are counted, not written; once it has passed, one record of
// the key carries their number (Record.Repeated), written by the next
// denial of the key or by the flusher, whichever comes first.
type Denials struct {
	window time.Duration
	max    int

	mu   sync.Mutex
	open map[denialKey]*denialWindow
}

// NewDenials aggregates the repeats of a denial within window (0 means
// DefaultDenialWindow).
func NewDenials(window time.Duration) *Denials {
	if window <= 0 {
		window = DefaultDenialWindow
	}
	return &Denials{window: window, max: maxDenialWindows, open: map[denialKey]*denialWindow{}}
}

// Admit decides whether rec is written. A record to write carries, in
// Repeated, the repeats of the window it closes; closed are records of
// other keys whose windows have passed, to be written too.
func (d *Denials) Admit(rec Record, now time.Time) (write bool, out Record, closed []Record) {
	k := keyOf(rec)
	d.mu.Lock()
	defer d.mu.Unlock()
	w, ok := d.open[k]
	if ok && now.Sub(w.start) < d.window {
		w.repeats++
		return false, rec, nil
	}
	if !ok && len(d.open) >= d.max {
		closed = d.closeLocked(now, false)
		if len(d.open) >= d.max {
			return true, rec, closed
		}
	}
	if ok {
		rec.Repeated = w.repeats
	}
	d.open[k] = &denialWindow{start: now}
	return true, rec, closed
}

// Unwrite forgets the window a record opened whose write failed, so that
// the next denial of its key is written.
func (d *Denials) Unwrite(rec Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.open, keyOf(rec))
}

// closeLocked removes windows that have passed (all, if every) and returns
// a record for each that counted repeats; d.mu is held.
func (d *Denials) closeLocked(now time.Time, every bool) []Record {
	var out []Record
	for k, w := range d.open {
		if !every && now.Sub(w.start) < d.window {
			continue
		}
		delete(d.open, k)
		if w.repeats > 0 {
			out = append(out, Record{
				Phase: PhaseDenied, Decision: "Denied", Caller: k.caller, Namespace: k.namespace, Tool: k.tool,
				Server: k.server, DataClass: k.dataClass, Reason: k.reason, Detail: k.detail,
				ApprovalName: k.approvalName, Repeated: w.repeats,
				ServerNamespace: k.serverNamespace, SharedServer: k.sharedServer,
			})
		}
	}
	return out
}

// Close removes the windows that have passed (every window, if every) and
// returns a record for each that counted repeats.
func (d *Denials) Close(now time.Time, every bool) []Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closeLocked(now, every)
}

// Window is how long repeats of a denial are aggregated.
func (d *Denials) Window() time.Duration { return d.window }
