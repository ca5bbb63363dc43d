// Package guardrail asks an administrator's external service (a
// guardrail webhook) about a tool call before it is sent and about its
// result before the agent reads it. Every request is signed with a key the
// two share, bounded in time and, per namespace, in rate, so that one
// tenant cannot spend the service's capacity for the others; any failure
// is one typed error, and the caller decides, by the tool's data class,
// whether to fail closed or open (FailClosed).
//
// The package imports nothing of Kubernetes or of the gateway.
package guardrail

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// Phases of a check: a call before it is sent, its result, and what a
// prompts/get (the prompt's messages) or a resources/read (the resource's
// contents) returns, each asked about as a result is; a prompts/get
// before it is sent, with the prompt's arguments; and what a tool's
// server asks the calling agent during a call (an elicitation, a sampling
// request), with the request's params as the agent would be asked.
const (
	PhaseRequest       = "request"
	PhaseResult        = "result"
	PhasePrompt        = "prompt"
	PhaseResource      = "resource"
	PhasePromptRequest = "promptRequest"
	PhaseElicitation   = "elicitation"
	PhaseSampling      = "sampling"
)

// replaces reports whether a verdict of phase may replace the text.
func replaces(phase string) bool {
	return phase == PhaseResult || phase == PhasePrompt || phase == PhaseResource
}

// SignatureHeader carries a request's signature:
// t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the key>.
const SignatureHeader = "X-Mcp-Catalog-Signature"

// Defaults of Config.
const (
	DefaultTimeout = 2 * time.Second
	DefaultRate    = 50
	DefaultBurst   = 100
	// MaxAnswerBytes bounds the service's answer.
	MaxAnswerBytes = 1 << 20
	// MaxReasonLength bounds the reason passed on to the agent.
	MaxReasonLength = 256
	// MinKeyLength is the shortest signing key accepted.
	MinKeyLength = 32
)

// Config is the webhook and its bounds.
type Config struct {
	// URL is the service's endpoint; empty turns the guardrail off.
	URL string
	// Key signs every request.
	Key []byte
	// Timeout bounds one check.
	Timeout time.Duration
	// Rate and Burst bound each namespace's checks (a token bucket).
	Rate  float64
	Burst int
	// Client sends the requests; nil: a client of its own.
	Client *http.Client
}

// Request is what the service is asked: the call, and in the result phase
// its result's text; in the elicitation and sampling phases, the server's
// request (Interaction: its params). Arguments and result are the call's
// own: the service is trusted with them, as the upstream is.
type Request struct {
	Phase     string          `json:"phase"`
	CallID    string          `json:"callID"`
	Namespace string          `json:"namespace"`
	Caller    string          `json:"caller"`
	Tool      string          `json:"tool"`
	Server    string          `json:"server"`
	DataClass string          `json:"dataClass"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    *string         `json:"result,omitempty"`
	// Interaction is the params of a server's request for input, as the
	// agent would be asked them (after result inspection).
	Interaction json.RawMessage `json:"interaction,omitempty"`
}

// Verdict is the service's answer. A result may be replaced (Result) when
// allowed; Reason says why a call or result was refused, for the agent.
type Verdict struct {
	Allow  bool    `json:"allow"`
	Reason string  `json:"reason,omitempty"`
	Result *string `json:"result,omitempty"`
}

// UnavailableError says the service gave no usable answer: Why is a fixed
// word (Timeout, Unreachable, Status, BadAnswer, BudgetExhausted).
type UnavailableError struct {
	Why string
	Err error
}

func (e *UnavailableError) Error() string {
	if e.Err == nil {
		return "the guardrail gave no answer: " + e.Why
	}
	return "the guardrail gave no answer: " + e.Why + ": " + e.Err.Error()
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Client asks the service.
type Client struct {
	cfg  Config
	http *http.Client
	now  func() time.Time

	mu      sync.Mutex
	budgets map[string]*rate.Limiter
}

// New is a client for cfg; nil when cfg.URL is empty (no guardrail). The
// key must be at least MinKeyLength bytes.
func New(cfg Config) (*Client, error) {
	if cfg.URL == "" {
		return nil, nil
	}
	if len(cfg.Key) < MinKeyLength {
		return nil, fmt.Errorf("the guardrail's signing key has %d bytes; it needs at least %d", len(cfg.Key), MinKeyLength)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultBurst
	}
	hc := cfg.Client
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{cfg: cfg, http: hc, now: time.Now, budgets: map[string]*rate.Limiter{}}, nil
}

// budget is the namespace's token bucket.
func (c *Client) budget(namespace string) *rate.Limiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.budgets[namespace]
	if !ok {
		l = rate.NewLimiter(rate.Limit(c.cfg.Rate), c.cfg.Burst)
		c.budgets[namespace] = l
	}
	return l
}

// Check asks the service about req. Any failure is an *UnavailableError.
func (c *Client) Check(ctx context.Context, req Request) (Verdict, error) {
	if !c.budget(req.Namespace).Allow() {
		return Verdict{}, &UnavailableError{Why: "BudgetExhausted"}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Verdict{}, &UnavailableError{Why: "BadRequest", Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return Verdict{}, &UnavailableError{Why: "Unreachable", Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(SignatureHeader, Sign(c.cfg.Key, c.now(), body))
	resp, err := c.http.Do(hr)
	if err != nil {
		why := "Unreachable"
		if errors.Is(err, context.DeadlineExceeded) {
			why = "Timeout"
		}
		// The URL is the administrator's; the error names it, never a
		// body.
		return Verdict{}, &UnavailableError{Why: why, Err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return Verdict{}, &UnavailableError{Why: "Status", Err: fmt.Errorf("HTTP %d", resp.StatusCode)}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		return Verdict{}, &UnavailableError{Why: "Unreachable", Err: err}
	}
	if len(raw) > MaxAnswerBytes {
		return Verdict{}, &UnavailableError{Why: "BadAnswer", Err: fmt.Errorf("the answer is larger than %d bytes", MaxAnswerBytes)}
	}
	var v Verdict
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return Verdict{}, &UnavailableError{Why: "BadAnswer", Err: errors.New("the answer is not a verdict")}
	}
	if v.Result != nil && (!replaces(req.Phase) || !v.Allow) {
		return Verdict{}, &UnavailableError{Why: "BadAnswer", Err: errors.New("a replacement result is only for an allowed result")}
	}
	v.Reason = clean(v.Reason)
	return v, nil
}

// clean bounds a reason and keeps only printable text of it.
func clean(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if len(out) == MaxReasonLength {
			break
		}
		if r == utf8.RuneError || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			continue
		}
		out = append(out, r)
	}
	return string(out)
}

// Sign is the signature header of body sent at t under key.
func Sign(key []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether header signs body under key within skew of now:
// what a guardrail service checks (and the tests do).
func Verify(key []byte, header string, body []byte, now time.Time, skew time.Duration) bool {
	var ts, sig string
	for _, part := range bytes.Split([]byte(header), []byte{','}) {
		k, v, ok := bytes.Cut(part, []byte{'='})
		if !ok {
			return false
		}
		switch string(k) {
		case "t":
			ts = string(v)
		case "v1":
			sig = string(v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > skew || d < -skew {
		return false
	}
	want := Sign(key, time.Unix(sec, 0), body)
	return hmac.Equal([]byte(want), []byte("t="+ts+",v1="+sig))
}
