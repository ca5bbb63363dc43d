package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// The guards every request passes, in order, before a handler sees it:
//
//  1. Host is one of the names of the loopback address the console is
//     bound to, with its port (a DNS-rebinding page names another host);
//  2. a request from a page sends Origin (or Sec-Fetch-Site) saying it is
//     this console's own page, and a request that changes something must
//     say so (a form on another site, or on another port, is refused);
//  3. the session cookie, set once by the one-time login link, is
//     presented (the login link itself is the only way to get it);
//  4. a change carries the session's CSRF token in a header, as JSON.
//
// Every response carries a strict Content-Security-Policy (the page runs
// only its own script, loads nothing from elsewhere, cannot be framed)
// and is never cached.

// csrfHeader carries the CSRF token of a change.
const csrfHeader = "X-CSRF-Token"

// sessionCookiePrefix and the port name the session cookie. Browsers keep
// cookies per host, not per port: two consoles on one machine would
// otherwise overwrite each other's session.
const sessionCookiePrefix = "mcp_console_"

// contentSecurityPolicy allows the page its own script, style and
// connections, and nothing else: no inline script or handler, no object,
// no frame, no form sent anywhere, no base URL.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// guard holds the secrets of one console: the one-time login token, and
// the session and CSRF token it turns into.
type guard struct {
	cookie string
	hosts  map[string]bool
	// origins are "http://" + each host.
	origins map[string]bool

	mu        sync.Mutex
	login     string
	loginUsed bool
	session   string
	csrf      string
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// newGuard accepts requests for the given host:port names, on port.
func newGuard(port int, hosts []string) *guard {
	g := &guard{cookie: sessionCookiePrefix + strconv.Itoa(port), hosts: map[string]bool{}, origins: map[string]bool{},
		login: randomToken(), session: randomToken(), csrf: randomToken()}
	for _, h := range hosts {
		g.hosts[h] = true
		g.origins["http://"+h] = true
	}
	return g
}

// refuse answers a request the guards refuse, saying which guard, as
// plain text.
func refuse(w http.ResponseWriter, code int, why string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte("refused: " + why + "\n"))
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// safeMethod reports a request that changes nothing.
func safeMethod(r *http.Request) bool {
	return r.Method == http.MethodGet || r.Method == http.MethodHead
}

// wrap puts the guards in front of h. loginPath is exempt from the
// session check: it is where the session comes from.
func (g *guard) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Content-Security-Policy", contentSecurityPolicy)
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("X-Frame-Options", "DENY")
		hdr.Set("Referrer-Policy", "no-referrer")
		hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
		hdr.Set("Cross-Origin-Resource-Policy", "same-origin")
		hdr.Set("Cache-Control", "no-store")

		if !g.hosts[r.Host] {
			refuse(w, http.StatusForbidden, "the Host header names another host than this console (DNS rebinding?)")
			return
		}
		origin := r.Header.Get("Origin")
		if origin != "" && !g.origins[origin] {
			refuse(w, http.StatusForbidden, "cross-origin request")
			return
		}
		switch r.Header.Get("Sec-Fetch-Site") {
		case "", "same-origin":
		case "none":
			// Typed or opened from outside a browser page: reading only.
			if !safeMethod(r) {
				refuse(w, http.StatusForbidden, "a change must come from the console's own page")
				return
			}
		default:
			refuse(w, http.StatusForbidden, "cross-site request")
			return
		}
		if !safeMethod(r) && origin == "" {
			refuse(w, http.StatusForbidden, "a change must say where it comes from (Origin)")
			return
		}
		if r.URL.Path == loginPath {
			g.serveLogin(w, r)
			return
		}
		c, err := r.Cookie(g.cookie)
		if err != nil || !g.validSession(c.Value) {
			refuse(w, http.StatusUnauthorized, "no console session: open the link `kubectl mcp console` printed (it works once)")
			return
		}
		if !safeMethod(r) {
			if !equal(r.Header.Get(csrfHeader), g.csrf) {
				refuse(w, http.StatusForbidden, "missing or wrong CSRF token")
				return
			}
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				refuse(w, http.StatusUnsupportedMediaType, "a change is sent as JSON")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (g *guard) validSession(v string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.loginUsed && equal(v, g.session)
}

// loginPath takes the one-time token and sets the session cookie.
const loginPath = "/login"

func (g *guard) serveLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		refuse(w, http.StatusMethodNotAllowed, "GET only")
		return
	}
	token := r.URL.Query().Get("token")
	g.mu.Lock()
	ok := !g.loginUsed && equal(token, g.login)
	if ok {
		g.loginUsed = true
	}
	session := g.session
	g.mu.Unlock()
	if !ok {
		refuse(w, http.StatusForbidden, "this login link is wrong or was already used; restart `kubectl mcp console` for a new one")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: g.cookie, Value: session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	// The token leaves the address bar and the history.
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
