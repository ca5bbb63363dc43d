package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recordedRegistry replays the recorded answers of the v0.1 API, and counts
// requests.
func recordedRegistry(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		file := ""
		status := http.StatusOK
		q := r.URL.Query()
		switch p := r.URL.EscapedPath(); {
		case p == "/v0.1/servers" && q.Get("search") == "weather":
			file = "search-weather.json"
		case p == "/v0.1/servers" && q.Get("cursor") == "":
			file = "list-page-1.json"
		case p == "/v0.1/servers" && q.Get("cursor") == "io.modelcontextprotocol/filesystem:1.0.2":
			file = "list-page-2.json"
		case p == "/v0.1/servers/io.github.user%2Fweather/versions":
			file = "weather-versions.json"
		case p == "/v0.1/servers/io.github.user%2Fweather/versions/latest":
			file = "weather-latest.json"
		case p == "/v0.1/servers/io.github.user%2Fweather/versions/1.0.1":
			file = "weather-1.0.1.json"
		default:
			file, status = "not-found.json", http.StatusNotFound
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(recorded(t, file))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func newTestClient(t *testing.T, url string, o Options) *Client {
	t.Helper()
	c, err := NewClient(url, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientReadsTheRecordedAnswers(t *testing.T) {
	srv, _ := recordedRegistry(t)
	c := newTestClient(t, srv.URL, Options{})
	ctx := context.Background()

	all, err := c.List(ctx, ListOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range all {
		names = append(names, s.Server.Name)
	}
	if got, want := strings.Join(names, ","), "io.github.user/weather,io.modelcontextprotocol/filesystem,com.example/demo-server,com.example/tenant-server,com.example/docs"; got != want {
		t.Errorf("listed %s, want %s (both pages)", got, want)
	}
	if all[4].Status() != StatusDeprecated || all[0].Status() != StatusActive || !all[0].IsLatest() {
		t.Errorf("statuses: %s %s latest=%v", all[4].Status(), all[0].Status(), all[0].IsLatest())
	}

	found, err := c.List(ctx, ListOptions{Search: "weather", Version: "latest"}, 0)
	if err != nil || len(found) != 1 || found[0].Server.Version != "1.0.2" {
		t.Fatalf("search: %v %+v", err, found)
	}
	r := found[0].Server.StreamableRemotes()
	if len(r) != 1 || r[0].URL != "https://api.example.com/mcp" || len(r[0].Headers) != 1 || !r[0].Headers[0].IsSecret {
		t.Errorf("remote: %+v", r)
	}

	vs, err := c.Versions(ctx, "io.github.user/weather")
	if err != nil || len(vs) != 2 || vs[0].Server.Version != "1.0.2" || !vs[0].IsLatest() || vs[1].Status() != StatusDeprecated {
		t.Fatalf("versions: %v %+v", err, vs)
	}
	latest, err := c.Version(ctx, "io.github.user/weather", "latest")
	if err != nil || latest.Server.Version != "1.0.2" || len(latest.Server.Remotes) != 2 {
		t.Fatalf("latest: %v %+v", err, latest)
	}
	old, err := c.Version(ctx, "io.github.user/weather", "1.0.1")
	if err != nil || old.Server.Version != "1.0.1" {
		t.Fatalf("1.0.1: %v %+v", err, old)
	}
	_, err = c.Version(ctx, "com.example/unknown", "latest")
	if !IsReason(err, ReasonNotFound) {
		t.Errorf("unknown server: %v, want %s", err, ReasonNotFound)
	}
}

func TestClientStopsAtTheMaxResults(t *testing.T) {
	srv, n := recordedRegistry(t)
	c := newTestClient(t, srv.URL, Options{})
	got, err := c.List(context.Background(), ListOptions{}, 2)
	if err != nil || len(got) != 2 || n.Load() != 1 {
		t.Fatalf("got %d servers in %d requests (%v), want 2 in 1", len(got), n.Load(), err)
	}
}

// canary is in every bad answer: no error may repeat it.
const canary = "sk-canary-7f3a"

// Every bad answer is a typed error naming the registry, never a panic and
// never the answer's bytes.
func TestClientRefusesBadAnswers(t *testing.T) {
	huge := `{"servers": [], "metadata": {"count": 0}, "x": "` + strings.Repeat("a", 5<<20) + `"}`
	cases := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		chunked bool
		reason  Reason
	}{
		{name: "huge with a length", body: huge, reason: ReasonTooLarge},
		{name: "huge without a length", body: huge, chunked: true, reason: ReasonTooLarge},
		{name: "not JSON", body: "<html><body>maintenance " + canary + "</body></html>", reason: ReasonMalformed},
		{name: "truncated JSON", body: `{"servers": [{"server": {"name": "` + canary, reason: ReasonMalformed},
		{name: "servers is a string", body: `{"servers": "` + canary + `"}`, reason: ReasonMalformed},
		{name: "name is a number", body: `{"servers": [{"server": {"name": 5, "version": "1", "description": "d"}}]}`, reason: ReasonMalformed},
		{name: "isLatest is a string", body: `{"servers": [{"server": {"name": "a.b/c", "version": "1", "description": "d"}, "_meta": {"io.modelcontextprotocol.registry/official": {"isLatest": "` + canary + `"}}}]}`, reason: ReasonMalformed},
		{name: "no servers array", body: `{"metadata": {"count": 0}}`, reason: ReasonMalformed},
		{name: "null", body: `null`, reason: ReasonMalformed},
		{name: "two values", body: `{"servers": []} {"servers": []}`, reason: ReasonMalformed},
		{name: "a name that is no registry name", body: `{"servers": [{"server": {"name": "../../` + canary + `", "version": "1", "description": "d"}}]}`, reason: ReasonMalformed},
		{name: "an empty version", body: `{"servers": [{"server": {"name": "a.b/c", "version": "", "description": "d"}}]}`, reason: ReasonMalformed},
		{name: "an unknown status", body: `{"servers": [{"server": {"name": "a.b/c", "version": "1", "description": "d"}, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "` + canary + `"}}}]}`, reason: ReasonMalformed},
		{name: "a huge cursor", body: `{"servers": [], "metadata": {"nextCursor": "` + strings.Repeat("c", 2000) + `"}}`, reason: ReasonMalformed},
		{name: "server error", status: 500, body: canary, reason: ReasonStatus},
		{name: "unauthorized", status: 401, body: canary, reason: ReasonStatus},
		{name: "not found", status: 404, body: canary, reason: ReasonNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				if tc.chunked {
					w.WriteHeader(http.StatusOK)
					for i := 0; i < len(tc.body); i += 64 << 10 {
						_, _ = io.WriteString(w, tc.body[i:min(i+64<<10, len(tc.body))])
						w.(http.Flusher).Flush()
					}
					return
				}
				w.Header().Set("Content-Length", fmt.Sprint(len(tc.body)))
				w.WriteHeader(cmp(tc.status, http.StatusOK))
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, Options{})
			_, err := c.ListPage(context.Background(), ListOptions{})
			var e *Error
			if !errors.As(err, &e) || e.Reason != tc.reason {
				t.Fatalf("got %v, want reason %s", err, tc.reason)
			}
			if !strings.Contains(err.Error(), strings.TrimPrefix(srv.URL, "http://")) {
				t.Errorf("%q does not name the registry", err)
			}
			if strings.Contains(err.Error(), canary) {
				t.Errorf("the error repeats the answer: %q", err)
			}
		})
	}
}

func cmp(v, otherwise int) int {
	if v == 0 {
		return otherwise
	}
	return v
}

// A redirect is never followed: the registry cannot send the client to
// another host (an internal address, say) with the person's request.
func TestClientFollowsNoRedirect(t *testing.T) {
	var hit atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hit.Add(1)
		_, _ = io.WriteString(w, `{"servers": []}`)
	}))
	defer elsewhere.Close()
	for _, status := range []int{301, 302, 307, 308} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+"/v0.1/servers?"+canary, status)
		}))
		_, err := newTestClient(t, srv.URL, Options{}).ListPage(context.Background(), ListOptions{})
		srv.Close()
		if !IsReason(err, ReasonRedirect) || strings.Contains(err.Error(), canary) {
			t.Errorf("%d: %v", status, err)
		}
	}
	if hit.Load() != 0 {
		t.Errorf("the client followed %d redirects", hit.Load())
	}
}

// A registry that sends a cursor again, or pages without end, is stopped.
func TestClientStopsPaginationLoops(t *testing.T) {
	page := func(cursor string) string {
		return `{"servers": [{"server": {"name": "a.b/c", "version": "1", "description": "d"}}], "metadata": {"nextCursor": "` + cursor + `"}}`
	}
	t.Run("a cursor sent twice", func(t *testing.T) {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			// a, b, a, b, ...
			next := "a"
			if r.URL.Query().Get("cursor") == "a" {
				next = "b"
			}
			_, _ = io.WriteString(w, page(next))
		}))
		defer srv.Close()
		got, err := newTestClient(t, srv.URL, Options{}).List(context.Background(), ListOptions{}, 0)
		if !IsReason(err, ReasonCursorLoop) || n.Load() != 3 || len(got) != 3 {
			t.Fatalf("got %v after %d requests and %d servers, want %s after 3", err, n.Load(), len(got), ReasonCursorLoop)
		}
	})
	t.Run("the same cursor as asked", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, page("same"))
		}))
		defer srv.Close()
		_, err := newTestClient(t, srv.URL, Options{}).List(context.Background(), ListOptions{}, 0)
		if !IsReason(err, ReasonCursorLoop) {
			t.Fatalf("got %v, want %s", err, ReasonCursorLoop)
		}
	})
	t.Run("pages without end", func(t *testing.T) {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, page(fmt.Sprint(n.Add(1))))
		}))
		defer srv.Close()
		_, err := newTestClient(t, srv.URL, Options{MaxPages: 5}).List(context.Background(), ListOptions{}, 0)
		if !IsReason(err, ReasonTooManyPages) || n.Load() != 5 {
			t.Fatalf("got %v after %d requests, want %s after 5", err, n.Load(), ReasonTooManyPages)
		}
	})
}

// An answer about another server than the one asked for is refused.
func TestClientRefusesAnAnswerAboutAnotherServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/versions") {
			_, _ = io.WriteString(w, `{"servers": [{"server": {"name": "evil.example/other", "version": "1", "description": "d"}}]}`)
			return
		}
		_, _ = io.WriteString(w, `{"server": {"name": "io.github.user/weather", "version": "9.9.9", "description": "d"}}`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, Options{})
	if _, err := c.Versions(context.Background(), "io.github.user/weather"); !IsReason(err, ReasonMalformed) {
		t.Errorf("versions: %v", err)
	}
	if _, err := c.Version(context.Background(), "io.github.user/weather", "1.0.2"); !IsReason(err, ReasonMalformed) {
		t.Errorf("version: %v", err)
	}
}

func TestClientTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c := newTestClient(t, srv.URL, Options{Timeout: 50 * time.Millisecond})
	_, err := c.ListPage(context.Background(), ListOptions{})
	if !IsReason(err, ReasonTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want %s", err, ReasonTimeout)
	}
}

func TestParseURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://registry.modelcontextprotocol.io":  true,
		"https://registry.modelcontextprotocol.io/": true,
		"https://sub.example.com/mcp-registry":      true,
		"http://localhost:8080":                     true,
		"ftp://example.com":                         false,
		"https://user:pass@example.com":             false,
		"https://example.com/?token=" + canary:      false,
		"https://example.com/#x":                    false,
		"registry.modelcontextprotocol.io":          false,
		"":                                          false,
		"https://example.com/%zz":                   false,
	} {
		_, err := ParseURL(raw)
		if (err == nil) != ok {
			t.Errorf("ParseURL(%q): %v, want ok=%v", raw, err, ok)
		}
		if err != nil && (!IsReason(err, ReasonInvalidURL) || strings.Contains(err.Error(), canary) || strings.Contains(err.Error(), "pass")) {
			t.Errorf("ParseURL(%q): %v", raw, err)
		}
	}
	if got, _ := NormalizeURL("https://registry.modelcontextprotocol.io/"); got != OfficialURL {
		t.Errorf("normalised %q", got)
	}
}

// The path segments are escaped: a server name's slash is one segment.
func TestClientEscapesNames(t *testing.T) {
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.EscapedPath()
		_, _ = io.WriteString(w, `{"server": {"name": "io.github.user/weather", "version": "1.0.0+20130313144700", "description": "d"}}`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL+"/sub", Options{})
	if _, err := c.Version(context.Background(), "io.github.user/weather", "1.0.0+20130313144700"); err != nil {
		t.Fatal(err)
	}
	if path != "/sub/v0.1/servers/io.github.user%2Fweather/versions/1.0.0+20130313144700" {
		t.Errorf("path %s", path)
	}
	if _, err := c.Version(context.Background(), "a b/c", "1"); !IsReason(err, ReasonMalformed) {
		t.Errorf("a name with a space: %v", err)
	}
}

func FuzzClientAnswer(f *testing.F) {
	for _, file := range []string{"list-page-1.json", "list-page-2.json", "weather-versions.json", "weather-latest.json", "not-found.json"} {
		b, err := readRecorded(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"servers":[{"server":{"name":"a.b/c","version":"1","remotes":[{"type":"streamable-http","url":"https://x/{y}"}]}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := NewClient("https://registry.test", Options{Transport: answer(body)})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if p, err := c.ListPage(ctx, ListOptions{}); err == nil {
			for i := range p.Servers {
				_, _ = Manifest(OfficialURL, &p.Servers[i], fuzzChoices())
			}
		}
		_, _ = c.Versions(ctx, "a.b/c")
		if r, err := c.Version(ctx, "a.b/c", "latest"); err == nil {
			_, _ = Manifest(OfficialURL, r, fuzzChoices())
		}
	})
}

// answer is a transport that answers every request with body.
type answer []byte

func (a answer) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(a)), ContentLength: int64(len(a))}, nil
}
