// Package natsembed owns the NATS server with JetStream that runs inside the
// agentruntime process: in `agentruntime dev` (no TCP port, an in-process
// connection) and in tests (a free loopback port, storage in a temp dir).
package natsembed

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Config of an embedded server.
type Config struct {
	// StoreDir holds JetStream's file storage; it survives restarts.
	StoreDir string
	// Listen: when false the server opens no TCP port and is reachable only
	// through Server.Connect, so dev mode never needs or takes port 4222.
	Listen bool
	// Host and Port when Listen is set; Port 0 picks a free port.
	Host string
	Port int
	// ServerName names the server in JetStream metadata.
	ServerName string
	// SyncAlways makes JetStream fsync every write before it acknowledges
	// it (nats-server's sync_interval: always): an acknowledged event then
	// survives a power loss or a kernel crash, not only the death of a
	// process. Off, the file store syncs on its interval (2 minutes).
	SyncAlways bool
}

// Server is a running embedded NATS server.
type Server struct {
	ns *server.Server
}

// Start runs a NATS server with JetStream and waits until it accepts
// connections.
func Start(cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("natsembed: StoreDir is required")
	}
	opts := &server.Options{
		ServerName:         cfg.ServerName,
		JetStream:          true,
		StoreDir:           cfg.StoreDir,
		NoLog:              true,
		NoSigs:             true,
		DontListen:         !cfg.Listen,
		Host:               cfg.Host,
		Port:               cfg.Port,
		JetStreamMaxMemory: 256 << 20,
		SyncAlways:         cfg.SyncAlways,
	}
	if cfg.Listen {
		if opts.Host == "" {
			opts.Host = "127.0.0.1"
		}
		if opts.Port == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	if opts.ServerName == "" {
		opts.ServerName = "agentruntime-embedded"
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("natsembed: server did not become ready within 30s")
	}
	return &Server{ns: ns}, nil
}

// Connect opens a client connection: in-process when the server has no
// listener, over loopback otherwise.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.Name("agentruntime"), nats.MaxReconnects(-1)}, opts...)
	if s.ns.ClientURL() == "" || s.ns.Addr() == nil {
		return nats.Connect("", append(opts, nats.InProcessServer(s.ns))...)
	}
	return nats.Connect(s.ns.ClientURL(), opts...)
}

// ClientURL is the server's nats:// URL, or "" when it has no listener.
func (s *Server) ClientURL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// Shutdown stops the server and waits until it is gone; JetStream flushes
// its stores on the way out.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}
