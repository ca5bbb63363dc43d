package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/mcp-catalog/operator/internal/fairqueue"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/internal/safeurl"
)

// The headers of a delivery. The signature is
//
//	v1,<base64 of HMAC-SHA256(key, id + "." + timestamp + "." + body)>
//
// over the exact body bytes, with the webhook-id and webhook-timestamp
// header values: the scheme of the Standard Webhooks specification, so its
// verifiers accept it (given the key as "whsec_" + base64 of the key).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
	// ContentType is the CloudEvents JSON format.
	ContentType = "application/cloudevents+json"
)

// Defaults of a Webhook.
const (
	// DefaultQueueSize bounds the events of one namespace waiting.
	DefaultQueueSize = 256
	// DefaultMaxQueued bounds the events of every namespace waiting.
	DefaultMaxQueued = 4096
	// DefaultConcurrency is how many events are delivered at once.
	DefaultConcurrency = 4
	// DefaultNamespaceRate and DefaultNamespaceBurst bound the events one
	// namespace may queue: one a second, bursts of 30.
	DefaultNamespaceRate  rate.Limit = 1
	DefaultNamespaceBurst            = 30
	DefaultMaxAttempts               = 6
	DefaultTimeout                   = 10 * time.Second
	DefaultBackoff                   = time.Second
	maxBackoff                       = time.Minute
)

// Results counted by the notifications metric.
const (
	ResultDelivered = "delivered"
	ResultRetried   = "retried"
	ResultFailed    = "failed"
	ResultDropped   = "dropped"
	// ResultLimited: the event's namespace was over its rate.
	ResultLimited = "limited"
)

// ErrBadWebhookURL is returned for a URL a Webhook does not send to.
var ErrBadWebhookURL = errors.New("notify: the webhook URL must be https (or http to a loopback address)")

// ErrNoKey is returned when the HMAC key file is missing or empty.
var ErrNoKey = errors.New("notify: no HMAC key")

// WebhookOptions configure a Webhook.
type WebhookOptions struct {
	// URL receives every event in a POST. Exactly one of URL and URLFile
	// is set.
	URL string
	// URLFile holds the URL instead (a mounted Secret key), for receivers
	// whose URL is itself a credential (a token in its path). It is read
	// at start and again at every delivery, like KeyFile; the URL is only
	// ever shown as scheme, host and port.
	URLFile string
	// KeyFile holds the HMAC key (its bytes, a trailing newline ignored).
	// It is read at every delivery, so a rotated Secret takes effect
	// without a restart.
	KeyFile string
	// QueueSize bounds the events of one namespace waiting; 0 means
	// DefaultQueueSize.
	QueueSize int
	// MaxQueued bounds the events of every namespace waiting; 0 means
	// DefaultMaxQueued.
	MaxQueued int
	// Concurrency is how many events are delivered at once; 0 means
	// DefaultConcurrency. One namespace's events take at most
	// fairqueue.DefaultMaxPerTenant(Concurrency) of them, and the
	// namespace holding fewest goes first, so that a namespace whose
	// events are slow to deliver does not hold back another's.
	Concurrency int
	// NamespaceRate and NamespaceBurst bound the events one namespace
	// may queue, in events a second and at once; an event over them is
	// dropped and counted as limited. 0 means DefaultNamespaceRate and
	// DefaultNamespaceBurst.
	NamespaceRate  rate.Limit
	NamespaceBurst int
	// MaxAttempts bounds the tries of one event; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// Timeout bounds one try; 0 means DefaultTimeout.
	Timeout time.Duration
	// Backoff is the first wait before a retry, doubled (with jitter) up
	// to a minute; 0 means DefaultBackoff.
	Backoff time.Duration
	// Client sends the requests; nil means a client with no proxy from
	// the environment and no redirects followed.
	Client *http.Client
	// Clock is the clock of the timestamps; nil means the real one.
	Clock clock.PassiveClock
}

// Webhook delivers events to one URL from a queue per namespace: each
// namespace's events are rate limited and bounded as they are queued, and
// delivered in order by a few workers shared fairly between namespaces
// (package fairqueue). Start runs the delivery; Notify only queues.
type Webhook struct {
	o     WebhookOptions
	queue *fairqueue.Queue[string]

	mu sync.Mutex
	// pending are the queued events by queue key (namespace, "/" and a
	// sequence number); perNamespace counts them by namespace.
	pending      map[string]Event
	perNamespace map[string]int
	limiters     map[string]*rate.Limiter
	seq          uint64
}

// maxLimiters is how many namespaces' rate limiters are kept before those
// that are full again are forgotten.
const maxLimiters = 1024

// NewWebhook checks the options and returns a Webhook that delivers once
// started.
func NewWebhook(o WebhookOptions) (*Webhook, error) {
	if (o.URL == "") == (o.URLFile == "") {
		return nil, fmt.Errorf("%w: give exactly one of a URL and a URL file", ErrBadWebhookURL)
	}
	w := &Webhook{o: o}
	if _, err := w.url(); err != nil {
		return nil, err
	}
	if o.KeyFile == "" {
		return nil, fmt.Errorf("%w: no key file given", ErrNoKey)
	}
	// The key is read at every delivery; a key that cannot be read at all
	// is a mistake in the deployment, said at start rather than as a
	// failure of every event.
	if _, err := w.key(); err != nil {
		return nil, err
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = DefaultMaxQueued
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.NamespaceRate <= 0 {
		o.NamespaceRate = DefaultNamespaceRate
	}
	if o.NamespaceBurst <= 0 {
		o.NamespaceBurst = DefaultNamespaceBurst
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Client == nil {
		o.Client = &http.Client{
			Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: o.Timeout}).DialContext, TLSHandshakeTimeout: o.Timeout},
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	w.o = o
	w.queue = fairqueue.New(queueNamespace, fairqueue.DefaultMaxPerTenant(o.Concurrency))
	w.pending, w.perNamespace, w.limiters = map[string]Event{}, map[string]int{}, map[string]*rate.Limiter{}
	return w, nil
}

// url is where the events go: URL, or URLFile's content read now.
func (w *Webhook) url() (string, error) {
	raw := w.o.URL
	if w.o.URLFile != "" {
		b, err := os.ReadFile(w.o.URLFile)
		if err != nil {
			return "", fmt.Errorf("%w: reading the URL file: %w", ErrBadWebhookURL, err)
		}
		raw = string(bytes.TrimRight(b, "\r\n"))
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname()))) {
		return "", fmt.Errorf("%w: %s", ErrBadWebhookURL, safeurl.Display(raw))
	}
	return raw, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// queueNamespace is the namespace of a queue key.
func queueNamespace(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

// Notify queues e in its namespace's queue, or drops it and counts it:
// limited when the namespace is over its rate, dropped when its queue or
// all of them are full. It never blocks.
func (w *Webhook) Notify(e Event) {
	w.mu.Lock()
	if !w.limiter(e.Namespace).AllowN(w.o.Clock.Now(), 1) {
		w.mu.Unlock()
		metrics.Notifications.WithLabelValues(e.Type, ResultLimited).Inc()
		return
	}
	if w.perNamespace[e.Namespace] >= w.o.QueueSize || len(w.pending) >= w.o.MaxQueued {
		w.mu.Unlock()
		metrics.Notifications.WithLabelValues(e.Type, ResultDropped).Inc()
		return
	}
	w.seq++
	key := e.Namespace + "/" + strconv.FormatUint(w.seq, 10)
	w.pending[key] = e
	w.perNamespace[e.Namespace]++
	w.mu.Unlock()
	w.queue.Add(key)
}

// limiter is ns's rate limiter; w.mu is held.
func (w *Webhook) limiter(ns string) *rate.Limiter {
	if l := w.limiters[ns]; l != nil {
		return l
	}
	if len(w.limiters) >= maxLimiters {
		// A limiter that is full again remembers nothing a new one would
		// not.
		now := w.o.Clock.Now()
		for name, l := range w.limiters {
			if l.TokensAt(now) >= float64(w.o.NamespaceBurst) {
				delete(w.limiters, name)
			}
		}
	}
	l := rate.NewLimiter(w.o.NamespaceRate, w.o.NamespaceBurst)
	w.limiters[ns] = l
	return l
}

// take removes the event of key from the pending ones.
func (w *Webhook) take(key string) (Event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.pending[key]
	if !ok {
		return Event{}, false
	}
	delete(w.pending, key)
	if w.perNamespace[e.Namespace]--; w.perNamespace[e.Namespace] <= 0 {
		delete(w.perNamespace, e.Namespace)
	}
	return e, true
}

// NeedLeaderElection is true: one process sends each event.
func (w *Webhook) NeedLeaderElection() bool { return true }

// Start delivers queued events, Concurrency at once, until ctx ends.
func (w *Webhook) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range w.o.Concurrency {
		wg.Go(func() {
			for {
				key, shutdown := w.queue.Get()
				if shutdown {
					return
				}
				if e, ok := w.take(key); ok && ctx.Err() == nil {
					w.deliver(ctx, e)
				}
				w.queue.Done(key)
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
	return nil
}

// errPermanent marks a refusal that a retry would not change.
var errPermanent = errors.New("the receiver refused the event")

// deliver tries e until it is accepted, refused for good, or out of
// attempts.
func (w *Webhook) deliver(ctx context.Context, e Event) {
	body, err := json.Marshal(e)
	if err != nil {
		metrics.Notifications.WithLabelValues(e.Type, ResultFailed).Inc()
		return
	}
	log := logging.FromContext(ctx, logging.Notify)
	wait := w.o.Backoff
	for attempt := 1; ; attempt++ {
		err := w.send(ctx, e.ID, body)
		if err == nil {
			metrics.Notifications.WithLabelValues(e.Type, ResultDelivered).Inc()
			return
		}
		if errors.Is(err, errPermanent) || attempt >= w.o.MaxAttempts || ctx.Err() != nil {
			metrics.Notifications.WithLabelValues(e.Type, ResultFailed).Inc()
			log.Error(err, "a notification was not delivered", "type", e.Type, "id", e.ID, "attempts", attempt)
			return
		}
		metrics.Notifications.WithLabelValues(e.Type, ResultRetried).Inc()
		// Full jitter: between half and all of the wait.
		d := wait/2 + rand.N(wait/2+1)
		select {
		case <-ctx.Done():
			metrics.Notifications.WithLabelValues(e.Type, ResultFailed).Inc()
			return
		case <-time.After(d):
		}
		wait = min(2*wait, maxBackoff)
	}
}

// key reads the HMAC key.
func (w *Webhook) key() ([]byte, error) {
	b, err := os.ReadFile(w.o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the key file: %w", ErrNoKey, err)
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: the key file is empty", ErrNoKey)
	}
	return b, nil
}

// Sign is the webhook-signature value of body sent with id at timestamp.
func Sign(key []byte, id string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Verify reports whether signature (a webhook-signature header, which may
// list several space-separated signatures) signs body with key.
func Verify(key []byte, id string, timestamp int64, body []byte, signature string) bool {
	want := Sign(key, id, timestamp, body)
	for _, s := range strings.Fields(signature) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

// send makes one try. A 2xx answer is delivery; 408, 429 and 5xx, and a
// failed connection, are worth another try; any other answer is final.
func (w *Webhook) send(ctx context.Context, id string, body []byte) error {
	key, err := w.key()
	if err != nil {
		return err
	}
	target, err := w.url()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	ts := w.o.Clock.Now().Unix()
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(key, id, ts, body))
	resp, err := w.o.Client.Do(req)
	if err != nil {
		// The error names the URL; the URL is the administrator's.
		return fmt.Errorf("sending to %s: %w", safeurl.Display(target), errors.Unwrap(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return fmt.Errorf("%s answered %d", safeurl.Display(target), c)
	default:
		return fmt.Errorf("%w: %s answered %d", errPermanent, safeurl.Display(target), c)
	}
}
