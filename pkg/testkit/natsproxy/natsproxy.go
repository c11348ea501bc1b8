// Package natsproxy puts a TCP proxy between NATS clients and a server so a
// test can cut a client's connection at an exact point of the protocol:
// before a chosen published message reaches the server, as a crash or a
// lost network would. Everything else passes through unchanged; clients
// reconnect through the proxy as they would to the server.
package natsproxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Proxy forwards connections from its own address to a NATS server.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu   sync.Mutex
	cut  func(Msg) bool
	cuts int
}

// Msg is a message a client publishes (PUB or HPUB), as the proxy saw it.
type Msg struct {
	Subject string
	// Header is the raw NATS header block (empty for PUB).
	Header []byte
}

// HasHeader says whether the message carries the header name (any value).
func (m Msg) HasHeader(name string) bool {
	for line := range strings.SplitSeq(string(m.Header), "\r\n") {
		if k, _, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return true
		}
	}
	return false
}

// Start listens on a free loopback port and forwards to the server at
// upstream (host:port, or a nats:// URL); it stops when the test ends.
func Start(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, upstream: strings.TrimPrefix(upstream, "nats://")}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.serve(c) })
		}
	})
	return p
}

// URL is the address clients connect to.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// CutBefore arms the proxy: the first published message for which cut
// returns true is not forwarded, and the connection that sent it is closed
// on both sides at once (what was sent before it was forwarded). The proxy
// disarms after one cut.
func (p *Proxy) CutBefore(cut func(Msg) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
}

// Cuts is how many connections the proxy has cut.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

func (p *Proxy) shouldCut(m Msg) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut == nil || !p.cut(m) {
		return false
	}
	p.cut = nil
	p.cuts++
	return true
}

func (p *Proxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		_, _ = io.Copy(client, server)
		client.Close()
	}()
	// Client to server, op by op: a message is forwarded whole or not at all.
	r := bufio.NewReaderSize(client, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		op, m, size, ok := parse(line)
		var body []byte
		if ok {
			body = make([]byte, size+2) // payload and its CRLF
			if _, err := io.ReadFull(r, body); err != nil {
				return
			}
			if op == "HPUB" {
				m.Header = body[:min(m.hdr, len(body))]
			}
			if p.shouldCut(m.Msg) {
				return
			}
		}
		if _, err := server.Write(append(line, body...)); err != nil {
			return
		}
	}
}

type parsed struct {
	Msg
	hdr int
}

// parse reads a PUB or HPUB line: its subject, header size and the size
// of what follows the line. Other ops are forwarded as they are.
func parse(line []byte) (op string, m parsed, size int, ok bool) {
	f := strings.Fields(string(bytes.TrimSpace(line)))
	if len(f) == 0 {
		return "", m, 0, false
	}
	op = strings.ToUpper(f[0])
	var err error
	switch {
	case op == "PUB" && (len(f) == 3 || len(f) == 4):
		size, err = strconv.Atoi(f[len(f)-1])
	case op == "HPUB" && (len(f) == 4 || len(f) == 5):
		m.hdr, err = strconv.Atoi(f[len(f)-2])
		if err == nil {
			size, err = strconv.Atoi(f[len(f)-1])
		}
	default:
		return op, m, 0, false
	}
	if err != nil {
		return op, m, 0, false
	}
	m.Subject = f[1]
	return op, m, size, true
}
