package guardrail

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

var key = []byte(strings.Repeat("g", 32))

// service is a guardrail webhook that checks each request's signature and
// answers with answer (a status and a body).
func service(t *testing.T, answer func(Request) (int, string)) (*httptest.Server, *[]Request) {
	t.Helper()
	var got []Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !Verify(key, r.Header.Get(SignatureHeader), body, time.Now(), time.Minute) {
			t.Errorf("a request whose signature does not verify: %q", r.Header.Get(SignatureHeader))
		}
		var req Request
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("not a request: %v", err)
		}
		got = append(got, req)
		status, text := answer(req)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, text)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func client(t *testing.T, url string, mod ...func(*Config)) *Client {
	t.Helper()
	cfg := Config{URL: url, Key: key, Timeout: time.Second}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCheckAsksASignedQuestionAndReadsTheVerdict(t *testing.T) {
	srv, got := service(t, func(r Request) (int, string) {
		if r.Phase == PhaseResult {
			return 200, `{"allow":true,"result":"cleaned"}`
		}
		return 200, `{"allow":false,"reason":"no deletes on Fridays\u001b[2J"}`
	})
	c := client(t, srv.URL)
	v, err := c.Check(context.Background(), Request{Phase: PhaseRequest, Namespace: "team", Arguments: json.RawMessage(`{"id":1}`)})
	if err != nil || v.Allow || v.Reason != "no deletes on Fridays[2J" {
		t.Fatalf("request: %+v %v (the reason's control character is dropped)", v, err)
	}
	text := "raw"
	v, err = c.Check(context.Background(), Request{Phase: PhaseResult, Namespace: "team", Result: &text})
	if err != nil || !v.Allow || v.Result == nil || *v.Result != "cleaned" {
		t.Fatalf("result: %+v %v", v, err)
	}
	if len(*got) != 2 || string((*got)[0].Arguments) != `{"id":1}` || *(*got)[1].Result != "raw" {
		t.Fatalf("the service was asked %+v", *got)
	}
}

func TestPromptsAndResourcesMayBeReplacedAsResults(t *testing.T) {
	srv, _ := service(t, func(Request) (int, string) { return 200, `{"allow":true,"result":"cleaned"}` })
	c := client(t, srv.URL)
	text := "raw"
	for _, phase := range []string{PhasePrompt, PhaseResource} {
		v, err := c.Check(context.Background(), Request{Phase: phase, Namespace: "team", Result: &text})
		if err != nil || v.Result == nil || *v.Result != "cleaned" {
			t.Fatalf("%s: %+v %v", phase, v, err)
		}
	}
}

func TestEveryFailureIsUnavailableWithAFixedWord(t *testing.T) {
	// The slow service answers once the test is over: its cleanup is
	// registered after the server's, so it runs first.
	slow := make(chan struct{})
	for _, tc := range []struct {
		name   string
		answer func(Request) (int, string)
		phase  string
		why    string
	}{
		{"a 500", func(Request) (int, string) { return 500, "boom" }, PhaseRequest, "Status"},
		{"not JSON", func(Request) (int, string) { return 200, "<html>" }, PhaseRequest, "BadAnswer"},
		{"an unknown field", func(Request) (int, string) { return 200, `{"allow":true,"allowAll":true}` }, PhaseRequest, "BadAnswer"},
		{"a replacement for a request", func(Request) (int, string) { return 200, `{"allow":true,"result":"x"}` }, PhaseRequest, "BadAnswer"},
		{"a replacement of a refused result", func(Request) (int, string) { return 200, `{"allow":false,"result":"x"}` }, PhaseResult, "BadAnswer"},
		{"a replacement for a prompt's arguments", func(Request) (int, string) { return 200, `{"allow":true,"result":"x"}` }, PhasePromptRequest, "BadAnswer"},
		{"a replacement for an elicitation", func(Request) (int, string) { return 200, `{"allow":true,"result":"x"}` }, PhaseElicitation, "BadAnswer"},
		{"a replacement for a sampling request", func(Request) (int, string) { return 200, `{"allow":true,"result":"x"}` }, PhaseSampling, "BadAnswer"},
		{"too large", func(Request) (int, string) {
			return 200, `{"allow":true,"reason":"` + strings.Repeat("a", MaxAnswerBytes) + `"}`
		}, PhaseRequest, "BadAnswer"},
		{"too slow", func(Request) (int, string) { <-slow; return 200, `{"allow":true}` }, PhaseRequest, "Timeout"},
	} {
		srv, _ := service(t, tc.answer)
		if tc.why == "Timeout" {
			t.Cleanup(func() { close(slow) })
		}
		c := client(t, srv.URL, func(c *Config) { c.Timeout = 200 * time.Millisecond })
		_, err := c.Check(context.Background(), Request{Phase: tc.phase, Namespace: "team"})
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.Why != tc.why {
			t.Errorf("%s: %v, want Unavailable %s", tc.name, err, tc.why)
		}
	}
	c := client(t, "http://127.0.0.1:1/")
	var ue *UnavailableError
	if _, err := c.Check(context.Background(), Request{Namespace: "team"}); !errors.As(err, &ue) || ue.Why != "Unreachable" {
		t.Errorf("unreachable: %v", err)
	}
}

// One namespace spending its budget leaves another's whole.
func TestEachNamespaceHasABudgetOfItsOwn(t *testing.T) {
	srv, got := service(t, func(Request) (int, string) { return 200, `{"allow":true}` })
	c := client(t, srv.URL, func(c *Config) { c.Rate, c.Burst = 0.001, 3 })
	for range 3 {
		if _, err := c.Check(context.Background(), Request{Namespace: "noisy"}); err != nil {
			t.Fatal(err)
		}
	}
	var ue *UnavailableError
	if _, err := c.Check(context.Background(), Request{Namespace: "noisy"}); !errors.As(err, &ue) || ue.Why != "BudgetExhausted" {
		t.Fatalf("past its budget: %v", err)
	}
	if _, err := c.Check(context.Background(), Request{Namespace: "calm"}); err != nil {
		t.Fatalf("another namespace: %v", err)
	}
	if len(*got) != 4 {
		t.Fatalf("the service was asked %d times, want 4 (none past the budget)", len(*got))
	}
}

func TestSignaturesAreBoundToBodyKeyAndTime(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := Sign(key, now, []byte("body"))
	if !Verify(key, h, []byte("body"), now.Add(30*time.Second), time.Minute) {
		t.Fatal("a good signature does not verify")
	}
	for name, ok := range map[string]bool{
		"another body": Verify(key, h, []byte("bodY"), now, time.Minute),
		"another key":  Verify([]byte(strings.Repeat("x", 32)), h, []byte("body"), now, time.Minute),
		"too old":      Verify(key, h, []byte("body"), now.Add(2*time.Minute), time.Minute),
		"garbled":      Verify(key, "t=1,v2", []byte("body"), now, time.Minute),
	} {
		if ok {
			t.Errorf("%s verifies", name)
		}
	}
	if _, err := New(Config{URL: "http://x", Key: []byte("short")}); err == nil {
		t.Error("a short key was accepted")
	}
	if c, err := New(Config{}); c != nil || err != nil {
		t.Error("no URL is no guardrail")
	}
}
