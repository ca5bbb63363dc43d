package console

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// unusedClient is a client the guards must never let a refused request
// reach: any call panics.
type unusedClient struct{ client.WithWatch }

// testConsole is a console bound to a free loopback port, not serving: its
// handler is called directly.
func testConsole(t *testing.T) *Console {
	t.Helper()
	c, err := Listen(Options{Client: unusedClient{}, Namespace: "agents"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.listener.Close() })
	return c
}

func (c *Console) host() string { return c.listener.Addr().String() }

// reply is the console's answer to one request.
type reply struct {
	StatusCode int
	Header     http.Header
	body       string
	cookies    []*http.Cookie
}

func (r reply) Cookies() []*http.Cookie { return r.cookies }

// do sends r to the console's handler and returns its answer.
func do(c *Console, r *http.Request) reply {
	w := httptest.NewRecorder()
	c.Handler().ServeHTTP(w, r)
	resp := w.Result()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{StatusCode: resp.StatusCode, Header: resp.Header, body: string(b), cookies: resp.Cookies()}
}

// login opens the one-time link and returns the session cookie.
func login(t *testing.T, c *Console) *http.Cookie {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, c.URL(), nil)
	r.Header.Set("Sec-Fetch-Site", "none")
	resp := do(c, r)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login: %d to %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == c.guard.cookie {
			if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" {
				t.Errorf("the session cookie is not HttpOnly, SameSite=Strict, Path=/: %+v", ck)
			}
			return ck
		}
	}
	t.Fatal("login set no session cookie")
	return nil
}

// change is a request that changes something, as the console's own page
// sends it.
func change(c *Console, session *http.Cookie, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://"+c.host()+"/api/tools/approve", strings.NewReader(body))
	r.Header.Set("Origin", "http://"+c.host())
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(csrfHeader, c.guard.csrf)
	if session != nil {
		r.AddCookie(session)
	}
	return r
}

func body(t *testing.T, resp reply) string {
	t.Helper()
	return resp.body
}

func TestTheOneTimeLinkGivesOneBrowserTheSession(t *testing.T) {
	c := testConsole(t)
	if !strings.HasPrefix(c.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL %q is not on the loopback address", c.URL())
	}

	wrong := httptest.NewRequest(http.MethodGet, "http://"+c.host()+loginPath+"?token=guess", nil)
	if resp := do(c, wrong); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a wrong token: %d, want 403", resp.StatusCode)
	}
	session := login(t, c)

	// The link works once: a second browser (or someone who read the
	// terminal later) gets nothing.
	again := httptest.NewRequest(http.MethodGet, c.URL(), nil)
	if resp := do(c, again); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("the link used again: %d, cookies %v; want 403 and none", resp.StatusCode, resp.Cookies())
	}

	page := httptest.NewRequest(http.MethodGet, "http://"+c.host()+"/", nil)
	if resp := do(c, page); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the page without the session: %d, want 401", resp.StatusCode)
	}
	forged := httptest.NewRequest(http.MethodGet, "http://"+c.host()+"/", nil)
	forged.AddCookie(&http.Cookie{Name: c.guard.cookie, Value: "forged"})
	if resp := do(c, forged); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the page with a forged session: %d, want 401", resp.StatusCode)
	}
	page.AddCookie(session)
	resp := do(c, page)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the page with the session: %d", resp.StatusCode)
	}
	if got := body(t, resp); !strings.Contains(got, `<meta name="csrf-token" content="`+c.guard.csrf+`">`) {
		t.Errorf("the page does not carry the CSRF token:\n%s", got)
	}
}

func TestAForeignHostIsRefusedBeforeAnythingElse(t *testing.T) {
	c := testConsole(t)
	session := login(t, c)
	_, port, _ := strings.Cut(c.host(), ":")
	for _, host := range []string{"rebind.example:" + port, "127.0.0.1:1", "evil.example", "localhost.evil.example:" + port} {
		r := httptest.NewRequest(http.MethodGet, "http://"+c.host()+"/", nil)
		r.Host = host
		r.AddCookie(session)
		resp := do(c, r)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body(t, resp), "Host") {
			t.Errorf("Host %q: %d, want 403 naming the Host header", host, resp.StatusCode)
		}
		// Nor can a page on such a host use the login link.
		l := httptest.NewRequest(http.MethodGet, c.URL(), nil)
		l.Host = host
		if resp := do(c, l); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("login through Host %q: %d, cookies %v", host, resp.StatusCode, resp.Cookies())
		}
	}
	ok := httptest.NewRequest(http.MethodGet, "http://localhost:"+port+"/", nil)
	ok.AddCookie(session)
	if resp := do(c, ok); resp.StatusCode != http.StatusOK {
		t.Errorf("Host localhost:%s: %d, want 200", port, resp.StatusCode)
	}
}

func TestAChangeFromAnywhereButTheConsolesPageIsRefused(t *testing.T) {
	c := testConsole(t)
	session := login(t, c)
	const valid = `{"kind":"McpTool","namespace":"agents","name":"docs.echo","hash":"not-a-hash"}`
	_, port, _ := strings.Cut(c.host(), ":")
	for _, attack := range []struct {
		name string
		edit func(*http.Request)
		code int
	}{
		{"a form on another site", func(r *http.Request) {
			r.Header.Set("Origin", "http://evil.example")
			r.Header.Set("Sec-Fetch-Site", "cross-site")
		}, http.StatusForbidden},
		{"a form on another port of this machine (same site, other origin)", func(r *http.Request) {
			r.Header.Set("Origin", "http://127.0.0.1:1")
			r.Header.Set("Sec-Fetch-Site", "same-site")
		}, http.StatusForbidden},
		{"an opaque origin (sandboxed frame, file://)", func(r *http.Request) { r.Header.Set("Origin", "null") }, http.StatusForbidden},
		{"a request saying it is same-site, not same-origin", func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") }, http.StatusForbidden},
		{"no Origin at all", func(r *http.Request) { r.Header.Del("Origin") }, http.StatusForbidden},
		{"typed into the address bar", func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "none") }, http.StatusForbidden},
		{"no CSRF token", func(r *http.Request) { r.Header.Del(csrfHeader) }, http.StatusForbidden},
		{"a wrong CSRF token", func(r *http.Request) { r.Header.Set(csrfHeader, "guess") }, http.StatusForbidden},
		{"the CSRF token of the login link", func(r *http.Request) { r.Header.Set(csrfHeader, c.guard.login) }, http.StatusForbidden},
		{"a plain HTML form's body", func(r *http.Request) { r.Header.Set("Content-Type", "application/x-www-form-urlencoded") }, http.StatusUnsupportedMediaType},
		{"no session", func(r *http.Request) { r.Header.Del("Cookie") }, http.StatusUnauthorized},
		{"a foreign Host", func(r *http.Request) { r.Host = "rebind.example:" + port }, http.StatusForbidden},
	} {
		r := change(c, session, valid)
		attack.edit(r)
		// unusedClient panics if a refused request reaches the API.
		resp := do(c, r)
		if resp.StatusCode != attack.code || !strings.HasPrefix(body(t, resp), "refused: ") {
			t.Errorf("%s: %d, want %d from a guard", attack.name, resp.StatusCode, attack.code)
		}
	}
	// The same request as the page sends it passes every guard: the
	// handler itself refuses the malformed hash, before asking the API.
	resp := do(c, change(c, session, valid))
	if got := body(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(got, "no definition hash") {
		t.Errorf("the page's own request: %d %s, want 400 from the handler", resp.StatusCode, got)
	}
}

func TestAReadFromAnotherSiteIsRefused(t *testing.T) {
	c := testConsole(t)
	session := login(t, c)
	for _, path := range []string{"/", "/events", "/api/view", "/static/app.js"} {
		r := httptest.NewRequest(http.MethodGet, "http://"+c.host()+path, nil)
		r.AddCookie(session)
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		if resp := do(c, r); resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s from another site: %d, want 403", path, resp.StatusCode)
		}
	}
}

func TestEveryResponseForbidsScriptsAndAssetsFromElsewhere(t *testing.T) {
	c := testConsole(t)
	session := login(t, c)
	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "http://"+c.host()+"/", nil),
		httptest.NewRequest(http.MethodGet, "http://"+c.host()+"/static/app.js", nil),
		httptest.NewRequest(http.MethodGet, "http://evil.example/", nil),
	} {
		r.AddCookie(session)
		resp := do(c, r)
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s %s: CSP %q lacks %s", r.Host, r.URL.Path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "http") {
			t.Errorf("%s: CSP %q allows inline, eval or another origin", r.URL.Path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: missing nosniff, no-store or DENY: %v", r.URL.Path, resp.Header)
		}
	}
}

// Nothing the page loads comes from outside the binary, and the page runs
// no inline script or handler (which the CSP would block anyway).
func TestThePageLoadsNothingFromElsewhere(t *testing.T) {
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?(https?:)?//|@import`)
	inline := regexp.MustCompile(`(?i)<script(\s[^>]*)?>[^<]|\son[a-z]+\s*=|javascript:|\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`)
	err := fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, path)
		if err != nil {
			return err
		}
		if m := external.Find(b); m != nil {
			t.Errorf("%s loads something from elsewhere: %q", path, m)
		}
		if m := inline.Find(b); m != nil {
			t.Errorf("%s has inline script, a handler attribute or a markup sink: %q", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestListenRefusesAnAddressOtherMachinesCanReach(t *testing.T) {
	for _, addr := range []string{"0.0.0.0", "::", "192.0.2.1", "example.com"} {
		if _, err := Listen(Options{Client: unusedClient{}, Address: addr}); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("Listen(%q): %v, want ErrNotLoopback", addr, err)
		}
	}
	// The printed link names the bound port and carries the token.
	c := testConsole(t)
	u, err := url.Parse(c.URL())
	if err != nil || u.Host != c.host() || u.Query().Get("token") == "" {
		t.Errorf("URL %q", c.URL())
	}
}

// changeTo is a change the page sends to path, past every guard.
func changeTo(c *Console, session *http.Cookie, path, body string) *http.Request {
	r := change(c, session, body)
	r.URL.Path = path
	return r
}

// The attacks: a change request that names a kind the console does not
// approve or enable (anything but McpTool, McpPrompt, McpResource, or
// none), or a prompt or resource of a namespace the console does not show,
// is refused by the handler before it asks the API server anything
// (unusedClient panics if it is asked).
func TestAChangeOfAnUnknownKindOrOutsideTheScopeIsRefused(t *testing.T) {
	c := testConsole(t)
	session := login(t, c)
	h := hash("a")
	for _, path := range []string{"/api/tools/approve", "/api/tools/enable"} {
		for _, kind := range []string{"", "McpServer", "McpCallApproval", "Secret", "mcpprompt", "McpPrompts", "McpPrompt "} {
			req := `{"kind":"` + kind + `","namespace":"agents","name":"docs.review","hash":"` + h + `","enabled":true}`
			resp := do(c, changeTo(c, session, path, req))
			if got := body(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(got, "the kind is McpTool, McpPrompt or McpResource") {
				t.Errorf("%s of kind %q: %d %s, want 400", path, kind, resp.StatusCode, got)
			}
		}
		for _, kind := range []string{"McpPrompt", "McpResource", "McpTool"} {
			req := `{"kind":"` + kind + `","namespace":"kube-system","name":"docs.review","hash":"` + h + `","enabled":true}`
			resp := do(c, changeTo(c, session, path, req))
			if got := body(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(got, "names no object of the namespace this console shows") {
				t.Errorf("%s of a %s in another namespace: %d %s, want 400", path, kind, resp.StatusCode, got)
			}
		}
	}
}
