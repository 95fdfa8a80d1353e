// Package server runs the HTTP handler on a bound listener with TLS and
// graceful shutdown. Binding is separate from serving so that callers can
// listen on port 0 and learn the real address before serving (demo's
// base_url, tests).
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/finsvc/finsvc/internal/config"
)

// Timeouts guarding against slow or stuck clients. Bodies are small
// (config BodyLimit), so generous read/write limits cost nothing.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 60 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
)

// Server is a bound, not yet serving, HTTP(S) server.
type Server struct {
	ln     net.Listener
	also   []net.Listener // further addresses served alike (Also)
	srv    *http.Server
	grace  time.Duration
	tls    bool
	logger *slog.Logger
}

// Listen binds cfg.Addr. With cfg.TLSCert and cfg.TLSKey set it will serve
// HTTPS (TLS 1.2 minimum); the key pair is loaded here so that a bad
// certificate fails at startup, not at the first request.
func Listen(cfg *config.Config, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv := &http.Server{
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if cfg.TLS() {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("server: load TLS key pair: %w", err)
		}
		srv.TLSConfig = &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{cert},
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen on %s: %w", cfg.Addr, err)
	}
	return &Server{ln: ln, srv: srv, grace: cfg.ShutdownGrace, tls: cfg.TLS(), logger: logger}, nil
}

// Also binds addr as well, served with the same handler and TLS setting
// (the demo's [::1] beside 127.0.0.1).
func (s *Server) Also(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", addr, err)
	}
	s.also = append(s.also, ln)
	return nil
}

// Addrs are every bound address, Addr's first.
func (s *Server) Addrs() []*net.TCPAddr {
	out := []*net.TCPAddr{s.Addr()}
	for _, ln := range s.also {
		out = append(out, ln.Addr().(*net.TCPAddr))
	}
	return out
}

// Addr is the bound address (with the real port when cfg.Addr used port 0).
func (s *Server) Addr() *net.TCPAddr { return s.ln.Addr().(*net.TCPAddr) }

// TLS reports whether the server speaks HTTPS.
func (s *Server) TLS() bool { return s.tls }

// OnShutdown registers f to run when shutdown begins (e.g. stop claiming
// new webhook deliveries). f runs in its own goroutine.
func (s *Server) OnShutdown(f func()) { s.srv.RegisterOnShutdown(f) }

// Serve serves h until ctx is done, then stops accepting connections and
// waits up to the shutdown grace period for in-flight requests. It returns
// nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context, h http.Handler) error {
	s.srv.Handler = h
	s.srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	lns := append([]net.Listener{s.ln}, s.also...)
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() {
			if s.tls {
				errc <- s.srv.ServeTLS(ln, "", "")
			} else {
				errc <- s.srv.Serve(ln)
			}
		}()
	}
	for _, a := range s.Addrs() {
		s.logger.Info("listening", "addr", a.String(), "tls", s.tls)
	}

	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	s.logger.Info("shutting down", "grace", s.grace)
	sctx, cancel := context.WithTimeout(context.Background(), s.grace)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		s.srv.Close()
		return fmt.Errorf("server: requests still running after the %s shutdown grace; closed them", s.grace)
	}
	if err != nil {
		return fmt.Errorf("server: shutdown: %w", err)
	}
	for range lns {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("server: %w", err)
		}
	}
	return nil
}

// Close releases the listeners of a server that will not be served.
func (s *Server) Close() error {
	err := s.ln.Close()
	for _, ln := range s.also {
		ln.Close()
	}
	return err
}
