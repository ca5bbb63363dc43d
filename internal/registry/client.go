package registry

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Client defaults.
const (
	// DefaultTimeout bounds one request, connection to last byte.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseBytes bounds one answer. The official registry's
	// pages of 100 servers are a few hundred KiB.
	DefaultMaxResponseBytes = 4 << 20
	// DefaultMaxPages bounds the pages one search follows.
	DefaultMaxPages = 20
	// DefaultPageSize is the limit asked of each page.
	DefaultPageSize = 100
	// maxCursorBytes bounds a cursor sent back to the registry.
	maxCursorBytes = 1024
	// maxNameBytes bounds a server name put in a path (the API's own
	// maxLength is 200).
	maxNameBytes = 200
	// maxVersionBytes bounds a version put in a path (the API's maxLength).
	maxVersionBytes = 255
)

// Options tune a Client; zero values take the defaults.
type Options struct {
	Timeout          time.Duration
	MaxResponseBytes int64
	MaxPages         int
	PageSize         int
	// Transport sends the requests; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// UserAgent is sent on every request.
	UserAgent string
}

// Client reads one registry's v0.1 API. It follows no redirect, reads at
// most MaxResponseBytes of any answer, and returns an *Error for every
// failure.
type Client struct {
	base *url.URL
	http *http.Client
	opts Options
}

// ParseURL checks a registry URL: absolute http or https, a host, no user
// information, query or fragment (so that nothing secret is recorded on an
// object that names the registry). The path may name a subregistry's root.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return nil, &Error{Reason: ReasonInvalidURL, Op: "parse URL", Detail: "not a URL"}
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, &Error{Reason: ReasonInvalidURL, Op: "parse URL", Detail: "the scheme must be https or http"}
	case u.Host == "":
		return nil, &Error{Reason: ReasonInvalidURL, Op: "parse URL", Detail: "the URL needs a host"}
	case u.User != nil:
		return nil, &Error{Reason: ReasonInvalidURL, Host: u.Host, Op: "parse URL", Detail: "the URL must not carry user information"}
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, &Error{Reason: ReasonInvalidURL, Host: u.Host, Op: "parse URL", Detail: "the URL must not carry a query or fragment"}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// NormalizeURL is the registry URL as recorded on an imported object.
func NormalizeURL(raw string) (string, error) {
	u, err := ParseURL(raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// NewClient returns a client of the registry at baseURL.
func NewClient(baseURL string, opts Options) (*Client, error) {
	u, err := ParseURL(baseURL)
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.MaxPages <= 0 {
		opts.MaxPages = DefaultMaxPages
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	rt := opts.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc := &http.Client{
		Transport: rt,
		Timeout:   opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return &Client{base: u, http: hc, opts: opts}, nil
}

// URL is the registry's URL as the client uses it.
func (c *Client) URL() string { return c.base.String() }

// ListOptions select servers.
type ListOptions struct {
	// Search matches server names (and, on newer registries, descriptions).
	Search string
	// Version is "latest" or an exact version; empty asks for every
	// version the registry lists.
	Version string
	// Cursor continues a listing; empty starts it.
	Cursor string
	// Limit is the page size; 0 means the client's PageSize.
	Limit int
}

// Page is one page of a listing.
type Page struct {
	Servers    []ServerResponse
	NextCursor string
}

// ListPage reads one page of GET /v0.1/servers.
func (c *Client) ListPage(ctx context.Context, o ListOptions) (*Page, error) {
	if len(o.Cursor) > maxCursorBytes {
		return nil, c.err(ReasonMalformed, "list servers", 0, "the cursor is longer than %d bytes", maxCursorBytes)
	}
	q := url.Values{}
	if o.Search != "" {
		q.Set("search", o.Search)
	}
	if o.Version != "" {
		q.Set("version", o.Version)
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	limit := o.Limit
	if limit <= 0 {
		limit = c.opts.PageSize
	}
	q.Set("limit", strconv.Itoa(limit))
	var list ServerList
	if err := c.get(ctx, "list servers", []string{"servers"}, q, &list); err != nil {
		return nil, err
	}
	if err := checkList(&list); err != nil {
		return nil, c.err(ReasonMalformed, "list servers", 0, "%s", err)
	}
	p := &Page{Servers: list.Servers}
	if list.Metadata != nil {
		p.NextCursor = list.Metadata.NextCursor
	}
	return p, nil
}

// List reads every page of a listing, up to MaxPages pages and max servers
// (0: no bound beyond the pages). A cursor seen before ends it with
// ReasonCursorLoop; more pages than MaxPages with ReasonTooManyPages.
func (c *Client) List(ctx context.Context, o ListOptions, max int) ([]ServerResponse, error) {
	var out []ServerResponse
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages == c.opts.MaxPages {
			return out, c.err(ReasonTooManyPages, "list servers", 0, "more than %d pages", c.opts.MaxPages)
		}
		p, err := c.ListPage(ctx, o)
		if err != nil {
			return out, err
		}
		out = append(out, p.Servers...)
		if max > 0 && len(out) >= max {
			return out[:max], nil
		}
		if p.NextCursor == "" {
			return out, nil
		}
		if seen[p.NextCursor] || p.NextCursor == o.Cursor {
			return out, c.err(ReasonCursorLoop, "list servers", 0, "the registry sent a cursor it had sent before")
		}
		seen[p.NextCursor] = true
		o.Cursor = p.NextCursor
	}
}

// Versions reads GET /v0.1/servers/{name}/versions: every version of one
// server, newest first.
func (c *Client) Versions(ctx context.Context, name string) ([]ServerResponse, error) {
	op := "list versions"
	if err := checkPathValue(name, maxNameBytes); err != nil {
		return nil, c.err(ReasonMalformed, op, 0, "server name: %s", err)
	}
	var list ServerList
	if err := c.get(ctx, op, []string{"servers", name, "versions"}, nil, &list); err != nil {
		return nil, err
	}
	if err := checkList(&list); err != nil {
		return nil, c.err(ReasonMalformed, op, 0, "%s", err)
	}
	for i := range list.Servers {
		if list.Servers[i].Server.Name != name {
			return nil, c.err(ReasonMalformed, op, 0, "the answer holds another server than the one asked for")
		}
	}
	return list.Servers, nil
}

// Version reads GET /v0.1/servers/{name}/versions/{version}; version
// "latest" asks for the latest.
func (c *Client) Version(ctx context.Context, name, version string) (*ServerResponse, error) {
	op := "get version"
	if err := checkPathValue(name, maxNameBytes); err != nil {
		return nil, c.err(ReasonMalformed, op, 0, "server name: %s", err)
	}
	if err := checkPathValue(version, maxVersionBytes); err != nil {
		return nil, c.err(ReasonMalformed, op, 0, "version: %s", err)
	}
	var r ServerResponse
	if err := c.get(ctx, op, []string{"servers", name, "versions", version}, nil, &r); err != nil {
		return nil, err
	}
	if err := checkServer(&r); err != nil {
		return nil, c.err(ReasonMalformed, op, 0, "%s", err)
	}
	if r.Server.Name != name || (version != "latest" && r.Server.Version != version) {
		return nil, c.err(ReasonMalformed, op, 0, "the answer holds another server or version than the one asked for")
	}
	return &r, nil
}

// get sends GET base/v0.1/<segments...>?q and decodes a 200 answer into v.
func (c *Client) get(ctx context.Context, op string, segments []string, q url.Values, v any) error {
	u := *c.base
	raw := c.base.EscapedPath() + "/" + APIVersion
	plain := c.base.Path + "/" + APIVersion
	for _, s := range segments {
		raw += "/" + url.PathEscape(s)
		plain += "/" + s
	}
	u.Path, u.RawPath = plain, raw
	if q != nil {
		u.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return c.err(ReasonInvalidURL, op, 0, "cannot build the request")
	}
	req.Header.Set("Accept", "application/json")
	if c.opts.UserAgent != "" {
		req.Header.Set("User-Agent", c.opts.UserAgent)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.transportErr(ctx, op, err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotFound:
		return c.err(ReasonNotFound, op, resp.StatusCode, "")
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return c.err(ReasonRedirect, op, resp.StatusCode, "redirects are not followed; use the URL the registry redirects to")
	default:
		return c.err(ReasonStatus, op, resp.StatusCode, "")
	}
	if resp.ContentLength > c.opts.MaxResponseBytes {
		return c.err(ReasonTooLarge, op, 0, "the answer is larger than %d bytes", c.opts.MaxResponseBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxResponseBytes+1))
	if err != nil {
		return c.transportErr(ctx, op, err)
	}
	if int64(len(body)) > c.opts.MaxResponseBytes {
		return c.err(ReasonTooLarge, op, 0, "the answer is larger than %d bytes", c.opts.MaxResponseBytes)
	}
	if err := decodeStrict(body, v); err != nil {
		return c.err(ReasonMalformed, op, 0, "%s", err)
	}
	return nil
}

// decodeStrict decodes one JSON value and nothing after it. Its errors
// name the JSON field or offset, never the answer's bytes.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return fmt.Errorf("a field holds a JSON %s where the API prescribes %s", te.Value, jsonKind(te.Type))
		case errors.As(err, &se):
			return fmt.Errorf("not JSON (at byte %d)", se.Offset)
		default:
			return errors.New("not the JSON the API prescribes")
		}
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

func (c *Client) transportErr(ctx context.Context, op string, err error) error {
	var ne interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &Error{Reason: ReasonTimeout, Host: c.base.Host, Op: op, Detail: fmt.Sprintf("no answer within %s", c.opts.Timeout), Err: context.DeadlineExceeded}
	}
	if ctx.Err() != nil {
		return &Error{Reason: ReasonUnreachable, Host: c.base.Host, Op: op, Detail: "cancelled", Err: ctx.Err()}
	}
	return &Error{Reason: ReasonUnreachable, Host: c.base.Host, Op: op, Detail: unreachableDetail(err), Err: err}
}

// unreachableDetail names the kind of a transport failure in this
// package's words.
func unreachableDetail(err error) string {
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dns):
		return "the host name does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &cert):
		return "the server's certificate is not trusted"
	}
	return "no answer"
}

func (c *Client) err(r Reason, op string, status int, format string, args ...any) error {
	e := &Error{Reason: r, Host: c.base.Host, Op: op, StatusCode: status}
	if format != "" {
		e.Detail = fmt.Sprintf(format, args...)
	}
	return e
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another kind"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// checkPathValue refuses a value that cannot name a server or version.
func checkPathValue(s string, max int) error {
	switch {
	case s == "":
		return errors.New("empty")
	case len(s) > max:
		return fmt.Errorf("longer than %d bytes", max)
	}
	for _, r := range s {
		if r < 0x21 || r == 0x7f {
			return errors.New("holds a space or control character")
		}
	}
	return nil
}
