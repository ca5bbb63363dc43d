package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/test/poll"
)

// receiver is an HTTP endpoint that checks every delivery's signature
// with key and answers with the next status of answers (200 when none is
// left).
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	key     []byte
	answers []int
	got     []Event
	tries   int
	bad     []string
}

func newReceiver(t *testing.T, key string, answers ...int) *receiver {
	r := &receiver{key: []byte(key), answers: answers}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries++
	ts, err := strconv.ParseInt(req.Header.Get(HeaderTimestamp), 10, 64)
	switch {
	case req.Method != http.MethodPost || req.Header.Get("Content-Type") != ContentType:
		r.bad = append(r.bad, "method or content type: "+req.Method+" "+req.Header.Get("Content-Type"))
	case err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute:
		r.bad = append(r.bad, "timestamp: "+req.Header.Get(HeaderTimestamp))
	case !Verify(r.key, req.Header.Get(HeaderID), ts, body, req.Header.Get(HeaderSignature)):
		r.bad = append(r.bad, "signature: "+req.Header.Get(HeaderSignature))
	}
	code := http.StatusOK
	if len(r.answers) > 0 {
		code, r.answers = r.answers[0], r.answers[1:]
	}
	if code == http.StatusOK {
		var e Event
		if err := json.Unmarshal(body, &e); err != nil || e.ID != req.Header.Get(HeaderID) {
			r.bad = append(r.bad, "body: "+string(body))
		}
		r.got = append(r.got, e)
	}
	w.WriteHeader(code)
}

func (r *receiver) events() ([]Event, int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.got...), r.tries, append([]string(nil), r.bad...)
}

func keyFile(t *testing.T, key string) string {
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func started(t *testing.T, o WebhookOptions) *Webhook {
	t.Helper()
	w, err := NewWebhook(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func approval(name string) *mcpv1alpha1.McpCallApproval {
	return &mcpv1alpha1.McpCallApproval{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: name, UID: types.UID("uid-" + name)},
		Spec: mcpv1alpha1.McpCallApprovalSpec{Tool: "docs.echo", LocalName: "mcp_docs_echo", Server: "docs", Caller: "system:serviceaccount:agents:bot",
			DataClass: mcpv1alpha1.DataClassInternal, ArgumentsHash: "sha256:ab", ExpiresAt: metav1.NewTime(time.Now().Add(time.Hour))}}
}

func count(typ, result string) float64 {
	return testutil.ToFloat64(metrics.Notifications.WithLabelValues(typ, result))
}

// waitFor polls cond for at most ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.UntilEvery(t, 10*time.Second, 5*time.Millisecond, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}

func TestAnEventArrivesSignedAsACloudEvent(t *testing.T) {
	r := newReceiver(t, "first-key")
	kf := keyFile(t, "first-key")
	w := started(t, WebhookOptions{URL: r.URL, KeyFile: kf})
	before := count(TypeApprovalCreated, ResultDelivered)

	w.Notify(ApprovalCreated(approval("call-1"), time.Now()))
	waitFor(t, "the delivery", func() bool { got, _, _ := r.events(); return len(got) == 1 })
	got, _, bad := r.events()
	if len(bad) > 0 {
		t.Fatalf("the receiver refused: %v", bad)
	}
	e := got[0]
	if e.SpecVersion != "1.0" || e.Type != TypeApprovalCreated || e.ID != "uid-call-1/created" || e.Subject != "call-1" ||
		e.Source != "/apis/mcp.catalog.dev/v1alpha1/namespaces/agents/mcpcallapprovals" || e.DataContentType != "application/json" {
		t.Errorf("event attributes: %+v", e)
	}
	data, _ := json.Marshal(e.Data)
	var d ApprovalData
	if err := json.Unmarshal(data, &d); err != nil || d.Caller != "system:serviceaccount:agents:bot" || d.Tool != "docs.echo" || d.ArgumentsHash != "sha256:ab" {
		t.Errorf("event data: %s", data)
	}
	// The delivery is counted once the receiver's answer is back, which
	// can be after the receiver has recorded the event.
	waitFor(t, "the delivery counted once", func() bool { return count(TypeApprovalCreated, ResultDelivered) == before+1 })

	// The key is read at every delivery: a rotated Secret signs the next
	// event, and the receiver holding only the old key refuses it.
	if err := os.WriteFile(kf, []byte("second-key"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.Notify(ApprovalDecided(approval("call-2"), time.Now()))
	waitFor(t, "the second delivery", func() bool { _, tries, _ := r.events(); return tries == 2 })
	if _, _, bad := r.events(); len(bad) != 1 {
		t.Errorf("a delivery signed with the rotated key verified with the old one: %v", bad)
	}
}

func TestAFailingReceiverIsRetriedWithBackoffAndAPermanentRefusalIsNot(t *testing.T) {
	r := newReceiver(t, "k", http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusOK)
	w := started(t, WebhookOptions{URL: r.URL, KeyFile: keyFile(t, "k"), Backoff: time.Millisecond})
	retried := count(TypeDefinitionDrifted, ResultRetried)
	w.Notify(Event{ID: "a", Type: TypeDefinitionDrifted})
	waitFor(t, "delivery on the third try", func() bool { got, _, _ := r.events(); return len(got) == 1 })
	if _, tries, _ := r.events(); tries != 3 {
		t.Errorf("tries = %d, want 3", tries)
	}
	if got := count(TypeDefinitionDrifted, ResultRetried); got != retried+2 {
		t.Errorf("retries counted %v, want %v", got, retried+2)
	}

	refusing := newReceiver(t, "k", http.StatusBadRequest)
	failed := count(TypeApprovalDecided, ResultFailed)
	w = started(t, WebhookOptions{URL: refusing.URL, KeyFile: keyFile(t, "k"), Backoff: time.Millisecond})
	w.Notify(Event{ID: "b", Type: TypeApprovalDecided})
	waitFor(t, "the refusal counted", func() bool { return count(TypeApprovalDecided, ResultFailed) == failed+1 })
	if _, tries, _ := refusing.events(); tries != 1 {
		t.Errorf("a 400 was tried %d times, want once", tries)
	}

	down := newReceiver(t, "k", 500, 500, 500, 500, 500, 500, 500)
	failed = count(TypeApprovalCreated, ResultFailed)
	w = started(t, WebhookOptions{URL: down.URL, KeyFile: keyFile(t, "k"), Backoff: time.Millisecond, MaxAttempts: 4})
	w.Notify(Event{ID: "c", Type: TypeApprovalCreated})
	waitFor(t, "giving up", func() bool { return count(TypeApprovalCreated, ResultFailed) == failed+1 })
	if _, tries, _ := down.events(); tries != 4 {
		t.Errorf("tries = %d, want MaxAttempts (4)", tries)
	}
}

func TestNotifyNeverBlocksAndCountsWhatItDrops(t *testing.T) {
	// Nobody delivers: the queue fills, and every further event is dropped
	// at once.
	w, err := NewWebhook(WebhookOptions{URL: "https://receiver.example/hook", KeyFile: keyFile(t, "k"), QueueSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	dropped := count(TypeApprovalCreated, ResultDropped)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5 {
			w.Notify(Event{ID: strconv.Itoa(i), Type: TypeApprovalCreated})
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Notify blocked on a full queue")
	}
	if got := count(TypeApprovalCreated, ResultDropped); got != dropped+3 {
		t.Errorf("dropped counted %v, want %v", got, dropped+3)
	}
}

func TestNewWebhookRefusesAURLThatWouldLeakTheEvents(t *testing.T) {
	kf := keyFile(t, "k")
	for _, u := range []string{"http://receiver.example/hook", "https://user:pass@receiver.example/", "ftp://receiver.example/", "receiver.example", ""} {
		if _, err := NewWebhook(WebhookOptions{URL: u, KeyFile: kf}); !errors.Is(err, ErrBadWebhookURL) {
			t.Errorf("NewWebhook(%q): %v, want ErrBadWebhookURL", u, err)
		}
		// The same URL read from a file (a mounted Secret) is refused the
		// same way, and the refusal shows no more of it than its host.
		uf := filepath.Join(t.TempDir(), "url")
		if err := os.WriteFile(uf, []byte(u+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := NewWebhook(WebhookOptions{URLFile: uf, KeyFile: kf})
		if !errors.Is(err, ErrBadWebhookURL) {
			t.Errorf("NewWebhook(URLFile holding %q): %v, want ErrBadWebhookURL", u, err)
		}
		if err != nil && strings.Contains(u, "pass") && strings.Contains(err.Error(), "pass") {
			t.Errorf("the refusal shows the URL's credential: %v", err)
		}
	}
	if _, err := NewWebhook(WebhookOptions{URL: "https://receiver.example/"}); !errors.Is(err, ErrNoKey) {
		t.Errorf("no key file: %v, want ErrNoKey", err)
	}
	if _, err := NewWebhook(WebhookOptions{URL: "https://receiver.example/", KeyFile: filepath.Join(t.TempDir(), "missing")}); !errors.Is(err, ErrNoKey) {
		t.Errorf("a key file that cannot be read: %v, want ErrNoKey at start", err)
	}
	if _, err := NewWebhook(WebhookOptions{URL: "https://receiver.example/", URLFile: "x", KeyFile: kf}); !errors.Is(err, ErrBadWebhookURL) {
		t.Errorf("both a URL and a URL file: %v, want ErrBadWebhookURL", err)
	}
	for _, u := range []string{"https://receiver.example/hook", "http://127.0.0.1:8080/hook", "http://localhost/hook", "http://[::1]/"} {
		if _, err := NewWebhook(WebhookOptions{URL: u, KeyFile: kf}); err != nil {
			t.Errorf("NewWebhook(%q): %v", u, err)
		}
	}
}

// A URL read from a file goes where the file says at each delivery, so a
// rotated Secret takes effect without a restart.
func TestAURLFileIsReadAtEveryDelivery(t *testing.T) {
	first, second := newReceiver(t, "k"), newReceiver(t, "k")
	uf := filepath.Join(t.TempDir(), "url")
	if err := os.WriteFile(uf, []byte(first.URL+"/token-in-path\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := started(t, WebhookOptions{URLFile: uf, KeyFile: keyFile(t, "k"), Backoff: time.Millisecond})
	w.Notify(Event{ID: "one", Type: TypeApprovalCreated})
	waitFor(t, "the first delivery", func() bool { got, _, _ := first.events(); return len(got) == 1 })
	if err := os.WriteFile(uf, []byte(second.URL+"/token-in-path\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.Notify(Event{ID: "two", Type: TypeApprovalCreated})
	waitFor(t, "the delivery after the rotation", func() bool { got, _, _ := second.events(); return len(got) == 1 })
}

func TestASignatureCoversTheIDTheTimeAndTheBody(t *testing.T) {
	key, body := []byte("k"), []byte(`{"a":1}`)
	sig := Sign(key, "id", 100, body)
	if !Verify(key, "id", 100, body, "v1,other "+sig) {
		t.Fatal("the signature does not verify")
	}
	for name, ok := range map[string]bool{
		"another body":      Verify(key, "id", 100, []byte(`{"a":2}`), sig),
		"another id":        Verify(key, "id2", 100, body, sig),
		"another timestamp": Verify(key, "id", 101, body, sig),
		"another key":       Verify([]byte("k2"), "id", 100, body, sig),
	} {
		if ok {
			t.Errorf("%s verifies", name)
		}
	}
}

// The signature follows the Standard Webhooks scheme: HMAC-SHA256 of
// "<id>.<timestamp>.<body>" under the key, base64, prefixed "v1,". The
// expected value was computed outside this package (openssl dgst -sha256
// -hmac), so this test fails if Sign and Verify drift from the scheme
// together, which their round trip would not notice.
func TestSignMatchesTheStandardWebhooksScheme(t *testing.T) {
	key := []byte("a-shared-key-32-bytes-long-xxxx!")
	body := []byte(`{"specversion":"1.0","id":"msg_2Kd8Wq"}`)
	const want = "v1,E36WiSQSlmneF/PyJHDKQYiza59yP/kBzg1u/+jeWww="
	if got := Sign(key, "msg_2Kd8Wq", 1700000000, body); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	if !Verify(key, "msg_2Kd8Wq", 1700000000, body, "v1,other "+want) {
		t.Error("Verify refused a header listing the right signature beside another")
	}
}

// The attack: one namespace floods the notifications (its agents start
// calls that wait for approval as fast as they can, or its receiver-side
// events are slow to deliver). Its events are rate limited as they are
// queued and hold at most its share of the delivery workers, so another
// namespace's event is delivered at once, while every event of the noisy
// namespace the receiver got is still held.
func TestOneNamespaceFloodingNotificationsDoesNotDelayAnother(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var noisyHeld, noisyGot, quietGot int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e Event
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &e)
		if strings.Contains(e.Source, "/namespaces/noisy/") {
			mu.Lock()
			noisyHeld++
			mu.Unlock()
			<-release
			mu.Lock()
			noisyGot++
			mu.Unlock()
		} else {
			mu.Lock()
			quietGot++
			mu.Unlock()
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	w := started(t, WebhookOptions{URL: srv.URL, KeyFile: keyFile(t, "k"), Timeout: time.Minute})

	limited := count(TypeDefinitionDrifted, ResultLimited)
	for i := range 1000 {
		w.Notify(DefinitionDrifted(driftedTool("noisy", strconv.Itoa(i)), hashOf("a"), time.Now()))
	}
	waitFor(t, "the noisy namespace's deliveries held by the receiver", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return noisyHeld >= 1
	})
	w.Notify(DefinitionDrifted(driftedTool("quiet", "x"), hashOf("a"), time.Now()))
	waitFor(t, "the quiet namespace's event delivered beside the held ones", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return quietGot == 1
	})
	mu.Lock()
	held, got := noisyHeld, noisyGot
	mu.Unlock()
	if got != 0 || held > 3 {
		t.Errorf("the noisy namespace had %d deliveries held and %d done; want at most 3 held (its share of 4 workers) and none done", held, got)
	}
	if n := count(TypeDefinitionDrifted, ResultLimited) - limited; n < 1000-DefaultNamespaceBurst-1 {
		t.Errorf("%v of 1000 events over the namespace's rate were limited, want at least %d", n, 1000-DefaultNamespaceBurst-1)
	}
}

func driftedTool(ns, name string) *mcpv1alpha1.McpTool {
	t := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs." + name, UID: types.UID(ns + "-" + name)}}
	t.Spec.ApprovedDefinitionHash = hashOf("a")
	t.Status.DefinitionHash = hashOf("b")
	return t
}
