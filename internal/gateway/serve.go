package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/mcp-catalog/operator/internal/logging"
)

// Listener serves a Gateway as a manager Runnable on every replica (it does
// not need the leader lease).
type Listener struct {
	Addr    string
	Handler http.Handler
	// CertDir holds tls.crt and tls.key, reloaded when they change. Empty
	// means plain HTTP, which Insecure must then allow.
	CertDir  string
	Insecure bool
	// Ready, if set, receives the bound address once listening.
	Ready chan<- string
	// MaxIdleConnections bounds the connections kept open idle between
	// requests; past it the one idle longest is closed. 0 means
	// DefaultMaxIdleConnections.
	MaxIdleConnections int
	// ShutdownTimeout is how long requests in flight may finish when the
	// manager stops; 0 means 10s. Connections still open then (an agent's
	// event stream stays open for as long as its session) are closed.
	ShutdownTimeout time.Duration
}

// NeedLeaderElection is false: every replica serves agents.
func (l *Listener) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (l *Listener) Start(ctx context.Context) error {
	log := logging.FromContext(ctx, logging.Gateway)
	idle := newIdleConns(l.MaxIdleConnections)
	srv := &http.Server{Handler: l.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ConnState: idle.track}
	ln, err := net.Listen("tcp", l.Addr)
	if err != nil {
		return fmt.Errorf("gateway: listening on %s: %w", l.Addr, err)
	}
	switch {
	case l.CertDir != "":
		cw, err := certwatcher.New(filepath.Join(l.CertDir, "tls.crt"), filepath.Join(l.CertDir, "tls.key"))
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("gateway: loading the TLS certificate: %w", err)
		}
		go func() {
			if err := cw.Start(ctx); err != nil {
				log.Error(err, "certificate watcher stopped")
			}
		}()
		ln = tls.NewListener(ln, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cw.GetCertificate, NextProtos: []string{"http/1.1"}})
	case !l.Insecure:
		_ = ln.Close()
		return errors.New("gateway: no TLS certificate directory given; plain HTTP needs the explicit development flag")
	}
	if l.Ready != nil {
		l.Ready <- ln.Addr().String()
	}
	log.Info("serving MCP", "addr", ln.Addr().String(), "tls", l.CertDir != "")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		grace := l.ShutdownTimeout
		if grace <= 0 {
			grace = 10 * time.Second
		}
		shutdown, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		err := srv.Shutdown(shutdown)
		if errors.Is(err, context.DeadlineExceeded) {
			// Shutdown waits for every connection to go idle, and an open
			// event stream never does: cut what is left.
			log.Info("closing connections still open after the shutdown grace period", "grace", grace.String())
			err = srv.Close()
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
