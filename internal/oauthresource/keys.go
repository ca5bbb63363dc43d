package oauthresource

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-logr/logr"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"
)

// issuer is one configured identity provider: discovered on first use,
// its key set kept by go-oidc, and every fetch guarded.
type issuer struct {
	cfg      Issuer
	clock    clock.PassiveClock
	interval time.Duration
	log      logr.Logger
	client   *http.Client // discovery
	fetcher  *keyFetcher  // the key set's transport

	discovery singleflight.Group

	mu         sync.Mutex
	keys       *oidc.RemoteKeySet // nil until discovered
	lastTry    time.Time          // of discovery, while it fails
	discoveryE error
}

func newIssuer(cfg Issuer, o Options) *issuer {
	base := o.Transport
	if base == nil {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.CertificateAuthority != "" {
			tc.RootCAs = x509.NewCertPool()
			tc.RootCAs.AppendCertsFromPEM([]byte(cfg.CertificateAuthority))
		}
		base = &http.Transport{
			// An identity provider is reached directly: HTTP(S)_PROXY in
			// the environment is not used, as for token endpoints.
			Proxy:                 nil,
			TLSClientConfig:       tc,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   o.FetchTimeout,
			ResponseHeaderTimeout: o.FetchTimeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
		}
	}
	log := o.Log.WithValues("issuer", cfg.URL)
	is := &issuer{cfg: cfg, clock: o.Clock, interval: o.KeyRefreshInterval, log: log}
	is.client = &http.Client{Transport: guarded{base}, Timeout: o.FetchTimeout}
	is.fetcher = &keyFetcher{base: guarded{base}, clock: o.Clock, interval: o.KeyRefreshInterval, log: log}
	return is
}

// keySet is the issuer's key set, discovering the issuer first if that
// has not succeeded yet. After a failed discovery, the next waits
// KeyRefreshInterval; meanwhile every token of the issuer is answered
// unavailable without a request.
func (is *issuer) keySet(ctx context.Context) (*oidc.RemoteKeySet, error) {
	is.mu.Lock()
	keys, lastTry, failed := is.keys, is.lastTry, is.discoveryE
	is.mu.Unlock()
	if keys != nil {
		return keys, nil
	}
	if failed != nil {
		if wait := is.interval - is.clock.Since(lastTry); wait > 0 {
			return nil, &UnavailableError{Issuer: is.cfg.URL, RetryAfter: wait, stage: "discovery failed lately", cause: failed}
		}
	}
	// One discovery at a time, whoever asks; a caller that gives up does
	// not cancel it for the others.
	ch := is.discovery.DoChan("", func() (any, error) { return is.discover() })
	select {
	case <-ctx.Done():
		return nil, &UnavailableError{Issuer: is.cfg.URL, RetryAfter: time.Second, stage: "discovery", cause: ctx.Err()}
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*oidc.RemoteKeySet), nil
	}
}

// discover reads the issuer's discovery document with go-oidc (which
// checks that it names this issuer) and builds the key set on its
// jwks_uri.
func (is *issuer) discover() (*oidc.RemoteKeySet, error) {
	is.mu.Lock()
	if is.keys != nil {
		defer is.mu.Unlock()
		return is.keys, nil
	}
	is.mu.Unlock()
	ctx := oidc.ClientContext(context.Background(), is.client)
	p, err := oidc.NewProvider(ctx, is.cfg.URL)
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err == nil {
		if err = p.Claims(&meta); err == nil && meta.JWKSURI == "" {
			err = errors.New("the discovery document names no jwks_uri")
		}
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	if err != nil {
		is.lastTry, is.discoveryE = is.clock.Now(), err
		is.log.Error(err, "discovering an OIDC issuer failed; its tokens are answered unavailable until it succeeds", "retryAfter", is.interval)
		return nil, &UnavailableError{Issuer: is.cfg.URL, RetryAfter: is.interval, stage: "discovery", cause: err}
	}
	// The key set's context is configuration only (its HTTP client);
	// go-oidc ignores its cancellation.
	is.keys = oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), &http.Client{Transport: is.fetcher, Timeout: is.client.Timeout}), meta.JWKSURI)
	is.discoveryE = nil
	is.log.V(1).Info("discovered an OIDC issuer")
	return is.keys, nil
}

// guarded is the transport to identity providers: an answer other than
// 200 (a redirect included: none is followed) or a body over
// maxDocumentBytes is a *fetchError, and so is a request that fails.
// go-oidc then reports it wrapped, where errors.As finds it.
type guarded struct{ base http.RoundTripper }

func (g guarded) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		return nil, &fetchError{cause: err}
	}
	raw := resp.Body
	defer func() { _ = raw.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, &fetchError{status: resp.StatusCode}
	}
	body, err := io.ReadAll(io.LimitReader(raw, maxDocumentBytes+1))
	if err != nil {
		return nil, &fetchError{cause: err}
	}
	if len(body) > maxDocumentBytes {
		return nil, &fetchError{oversized: true}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// fetchError is a request to an identity provider that did not bring a
// usable answer. Its text never repeats what the provider sent.
type fetchError struct {
	status    int
	oversized bool
	cause     error
}

func (e *fetchError) Error() string {
	switch {
	case e.status != 0:
		return fmt.Sprintf("the identity provider answered HTTP %d", e.status)
	case e.oversized:
		return fmt.Sprintf("the identity provider's answer is over %d bytes", maxDocumentBytes)
	}
	return "the request to the identity provider failed: " + e.cause.Error()
}

func (e *fetchError) Unwrap() error { return e.cause }

// keyFetcher is the transport of an issuer's go-oidc key set. go-oidc
// fetches the keys again whenever a token's key id is not in its cache;
// this transport lets it reach the identity provider at most once per
// KeyRefreshInterval, so that tokens with made-up key ids cost the
// provider nothing. Within the interval it answers with the last set it
// fetched: a caller that found go-oidc's cache empty just before another
// caller's fetch filled it gets those keys rather than a refusal. It also
// remembers that set's key ids, so that a refused token can be told
// apart: unknown key, or bad signature.
type keyFetcher struct {
	base     http.RoundTripper
	clock    clock.PassiveClock
	interval time.Duration
	log      logr.Logger

	mu        sync.Mutex
	attempted bool
	last      time.Time
	failed    error  // of the last fetch
	set       []byte // the last set fetched
	kids      map[string]bool
}

func (f *keyFetcher) RoundTrip(req *http.Request) (*http.Response, error) {
	now := f.clock.Now()
	f.mu.Lock()
	if f.attempted {
		if wait := f.interval - now.Sub(f.last); wait > 0 {
			failed, set := f.failed, f.set
			f.mu.Unlock()
			if failed == nil && set != nil {
				return &http.Response{
					Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
					Header:        http.Header{"Content-Type": {"application/json"}},
					Body:          io.NopCloser(bytes.NewReader(set)),
					ContentLength: int64(len(set)),
					Request:       req,
				}, nil
			}
			return nil, &tooSoon{wait: wait, failed: failed}
		}
	}
	f.attempted, f.last = true, now
	f.mu.Unlock()

	resp, err := f.base.RoundTrip(req)
	var set []byte
	var kids map[string]bool
	if err == nil {
		set, kids, err = keyIDs(resp)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.failed = err
		f.log.Error(err, "fetching an OIDC issuer's keys failed; tokens signed by keys not fetched before are answered unavailable", "retryAfter", f.interval)
		return nil, err
	}
	f.failed, f.set, f.kids = nil, set, kids
	f.log.V(1).Info("fetched an OIDC issuer's keys", "keys", len(kids))
	return resp, nil
}

// knows reports whether the last key set fetched has the key id.
func (f *keyFetcher) knows(kid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kids[kid]
}

// keyIDs reads a JWK set's body and its key ids (the body stays for
// go-oidc, which parses the keys themselves).
func keyIDs(resp *http.Response) ([]byte, map[string]bool, error) {
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, &fetchError{cause: err}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var set struct {
		Keys []struct {
			KeyID string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, nil, &fetchError{cause: errors.New("the key set is not a JWK set")}
	}
	kids := make(map[string]bool, len(set.Keys))
	for _, k := range set.Keys {
		kids[k.KeyID] = true
	}
	return body, kids, nil
}

// tooSoon is the key set's refetch refused by the interval with no set
// to answer with: the last fetch failed (failed), or none has ended yet.
type tooSoon struct {
	wait   time.Duration
	failed error
}

func (e *tooSoon) Error() string {
	return "the issuer's keys were fetched less than the refresh interval ago"
}
