package server

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/cors"
	"connectrpc.com/vanguard"
	rscors "github.com/rs/cors"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Browsers and curl reach the API on the gRPC port: a connection that opens
// with the HTTP/2 client preface is native gRPC and goes straight to
// grpc.Server.Serve (its own transport, the fast one); any other connection
// is HTTP/1.1 and goes to an http.Server whose handler is Vanguard's
// transcoder, which turns Connect (JSON or binary) and gRPC-Web calls into
// gRPC calls on the same grpc.Server through ServeHTTP. Both paths run the
// same interceptor chain, so authentication, validation and logging are
// identical (docs/adr/0008-browser-protocols-on-the-grpc-port.md).

// http2Preface is what every HTTP/2 client sends first (RFC 9113 §3.4).
var http2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

const (
	// sniffTimeout bounds how long a new connection may take to send its
	// first bytes before it is dropped.
	sniffTimeout = 10 * time.Second
	// maxTranscodeBuffer bounds a message the transcoder buffers to convert
	// it (JSON <-> binary); a little over gRPC's 4 MiB default.
	maxTranscodeBuffer = 8 << 20
)

// httpHandler builds the Connect/gRPC-Web handler over every service
// registered so far, with CORS for the allowed origins. Services whose
// descriptors are not in the global registry (built at run time) are served
// over native gRPC only.
func (s *Server) httpHandler(allowOrigin func(string) bool) (http.Handler, error) {
	var services []*vanguard.Service
	for name := range s.grpc.GetServiceInfo() {
		if s.foreign[name] {
			continue
		}
		desc, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
		if err != nil {
			s.log.Debug("service has no registered descriptor; native gRPC only", "service", name)
			continue
		}
		sd, ok := desc.(protoreflect.ServiceDescriptor)
		if !ok {
			continue
		}
		services = append(services, vanguard.NewServiceWithSchema(sd, s.grpc))
	}
	transcoder, err := vanguard.NewTranscoder(services,
		vanguard.WithDefaultServiceOptions(
			vanguard.WithTargetProtocols(vanguard.ProtocolGRPC),
			vanguard.WithTargetCodecs(vanguard.CodecProto),
			vanguard.WithMaxMessageBufferBytes(maxTranscodeBuffer),
			// Messages reach the in-process gRPC server uncompressed: one
			// (bounded) decompression here instead of another in gRPC, and
			// a compressed empty message is not forwarded as a compressed
			// frame of zero bytes, which gRPC fails to decompress.
			vanguard.WithNoTargetCompression(),
		),
		// A compressed message may not decompress past the same limit
		// (limits.go), and malformed JSON is the caller's error.
		vanguard.WithCompression(vanguard.CompressionGzip, func() connect.Compressor { return gzip.NewWriter(io.Discard) }, boundedGzip(maxTranscodeBuffer)),
		vanguard.WithCodec(newRequestJSON),
	)
	if err != nil {
		return nil, fmt.Errorf("server: transcoder: %w", err)
	}
	api := gzipBodyLimit(connectUnaryByDefault(transcoder), maxTranscodeBuffer)
	return rscors.New(rscors.Options{
		AllowOriginFunc: allowOrigin,
		AllowedMethods:  cors.AllowedMethods(),
		// Last-Event-ID: a stream mounted with Handle may resume from it.
		AllowedHeaders: append(cors.AllowedHeaders(), "Authorization", "Last-Event-ID"),
		ExposedHeaders: cors.ExposedHeaders(),
		MaxAge:         7200,
	}).Handler(withRoutes(s.routes, api)), nil
}

// withRoutes sends a request for a path mounted with Handle to its handler
// (a path mounted with a trailing slash takes every path below it) and
// every other one to api.
func withRoutes(routes map[string]http.Handler, api http.Handler) http.Handler {
	if len(routes) == 0 {
		return api
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := routes[r.URL.Path]; ok {
			h.ServeHTTP(w, r)
			return
		}
		for path, h := range routes {
			if strings.HasSuffix(path, "/") && len(path) > 1 && strings.HasPrefix(r.URL.Path, path) {
				h.ServeHTTP(w, r)
				return
			}
		}
		api.ServeHTTP(w, r)
	})
}

// connectUnaryByDefault marks a POST to /package.Service/Method without a
// Connect-Protocol-Version header as Connect unary, as connect-go servers
// do, so `curl -H 'Content-Type: application/json' -d '{...}'` works.
// Without the mark Vanguard would try REST, and our protos declare no REST
// routes.
func connectUnaryByDefault(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		if r.Method == http.MethodPost && r.Header.Get("Connect-Protocol-Version") == "" &&
			(ct == "application/json" || ct == "application/proto" || strings.HasPrefix(ct, "application/json;")) {
			r.Header.Set("Connect-Protocol-Version", "1")
		}
		next.ServeHTTP(w, r)
	})
}

// originPolicy returns which browser origins may call the API. Configured
// origins win ("*" is any origin). Without configuration a server that
// listens on loopback allows loopback origins (a console or app on the
// developer's machine) and any other server allows none.
func originPolicy(configured []string, addr net.Addr) func(string) bool {
	if len(configured) > 0 {
		if slices.Contains(configured, "*") {
			return func(string) bool { return true }
		}
		return func(origin string) bool { return slices.Contains(configured, origin) }
	}
	if !isLoopback(addr) {
		return func(string) bool { return false }
	}
	return func(origin string) bool {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return false
		}
		return isLoopbackHost(u.Hostname())
	}
}

// loopbackHostsOnly passes a request to next only when its Host names the
// server by a loopback name and the listening port, and its Origin, when
// set, is scheme:// (http, or https with TLS) with such a host and port or
// one of configured (Config.LoopbackHosts). DNS rebinding points a name the attacker
// controls at 127.0.0.1: the browser then sends that name as Host, and the
// page's own origin as Origin, neither of them a loopback name. Native
// gRPC (HTTP/2 with prior knowledge) does not come here: a browser cannot
// speak it.
func loopbackHostsOnly(next http.Handler, addr net.Addr, configured []string, scheme string) http.Handler {
	port := ""
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
	}
	local := func(hostport string) bool {
		host, p, err := net.SplitHostPort(hostport)
		if err != nil {
			// No port: only the default one.
			host, p = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), map[string]string{"http": "80", "https": "443"}[scheme]
		}
		return p == port && isLoopbackHost(host)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !local(r.Host) {
			http.Error(w, "this server answers only to a loopback host name with its port (localhost, 127.0.0.1, [::1])", http.StatusMisdirectedRequest)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !slices.Contains(configured, origin) && !slices.Contains(configured, "*") {
			u, err := url.Parse(origin)
			if err != nil || u.Scheme != scheme || u.Path != "" || !local(u.Host) {
				http.Error(w, "cross-origin request refused: this server answers only to its own loopback origin", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// connMux splits one listener in two by the first bytes of each connection
// (after the TLS handshake, when tls is set).
type connMux struct {
	root       net.Listener
	grpc, http *chanListener
	// h2 takes the HTTP/2 connections of TLS clients that also offered
	// HTTP/1.1 (tls.go); nil without TLS.
	h2  *chanListener
	log *slog.Logger
	tls *tls.Config
	// offered notes the connections whose client offered "http/1.1".
	offered *sync.Map
}

// newConnMux splits root; with base set, every connection is TLS with
// base's certificate (serverTLS).
func newConnMux(root net.Listener, log *slog.Logger, base *tls.Config) *connMux {
	m := &connMux{
		root: root,
		grpc: newChanListener(root.Addr()),
		http: newChanListener(root.Addr()),
		log:  log,
	}
	if base != nil {
		m.offered = &sync.Map{}
		m.tls = serverTLS(base, m.offered)
		m.h2 = newChanListener(root.Addr())
	}
	return m
}

// run accepts until the root listener fails or closes; then both halves
// report that error to their servers.
func (m *connMux) run() {
	for {
		conn, err := m.root.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			m.grpc.fail(err)
			m.http.fail(err)
			if m.h2 != nil {
				m.h2.fail(err)
			}
			return
		}
		// Sniffing waits on the client: never in the accept loop.
		go m.route(conn)
	}
}

func (m *connMux) route(conn net.Conn) {
	// The handshake and the first bytes share one deadline.
	_ = conn.SetDeadline(time.Now().Add(sniffTimeout))
	if m.tls != nil {
		tc := tls.Server(conn, m.tls)
		err := tc.Handshake()
		_, both := m.offered.LoadAndDelete(conn)
		if err != nil {
			m.log.Debug("TLS handshake failed", "remote", conn.RemoteAddr().String(), "error", err)
			_ = conn.Close()
			return
		}
		if both && tc.ConnectionState().NegotiatedProtocol == "h2" {
			_ = conn.SetDeadline(time.Time{})
			m.h2.deliver(tc)
			return
		}
		conn = tc
	}
	var head []byte
	buf := make([]byte, len(http2Preface))
	for len(head) < len(http2Preface) && bytes.HasPrefix(http2Preface, head) {
		n, err := conn.Read(buf[:len(http2Preface)-len(head)])
		head = append(head, buf[:n]...)
		if err != nil {
			m.log.Debug("connection closed before its protocol was known", "remote", conn.RemoteAddr().String(), "error", err)
			_ = conn.Close()
			return
		}
	}
	_ = conn.SetDeadline(time.Time{})
	sniffed := &sniffedConn{Conn: conn, head: head}
	if bytes.Equal(head, http2Preface) {
		m.grpc.deliver(sniffed)
		return
	}
	m.http.deliver(sniffed)
}

// sniffedConn replays the bytes read to route the connection.
type sniffedConn struct {
	net.Conn
	head []byte
}

func (c *sniffedConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// chanListener is a net.Listener fed by connMux.
type chanListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	err   error // set before done closes
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

func (l *chanListener) deliver(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *chanListener) fail(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.done)
	})
}

func (l *chanListener) Close() error {
	l.fail(net.ErrClosed)
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// errServerClosed hides http.ErrServerClosed, which is the normal end.
func httpServeErr(err error) error {
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
