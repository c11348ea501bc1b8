package natsserver

import (
	"bufio"
	"encoding/json"
	"net"
	"strings"
	"testing"
)

// FakeInfo is what a fake server announces in its INFO line.
type FakeInfo struct {
	Version   string
	JetStream bool
}

// Fake starts a loopback listener that speaks just enough of the NATS
// protocol for a client to connect (INFO, then PONG to every PING) and
// announces info.Version: a stand-in for an old or unfit server in tests of
// the version check. It answers no subscription and no request. It returns
// the nats:// URL; the listener closes when the test ends.
func Fake(t testing.TB, info FakeInfo) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natsserver: fake listen: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	line, err := json.Marshal(map[string]any{
		"server_id":   "FAKE",
		"server_name": "fake",
		"version":     info.Version,
		"proto":       1,
		"go":          "go1",
		"host":        "127.0.0.1",
		"port":        port,
		"headers":     true,
		"max_payload": 1 << 20,
		"jetstream":   info.JetStream,
	})
	if err != nil {
		t.Fatalf("natsserver: fake info: %v", err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serveFake(c, line)
		}
	}()
	return "nats://" + l.Addr().String()
}

func serveFake(c net.Conn, info []byte) {
	defer c.Close()
	if _, err := c.Write(append(append([]byte("INFO "), info...), "\r\n"...)); err != nil {
		return
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if strings.HasPrefix(strings.ToUpper(line), "PING") {
			if _, err := c.Write([]byte("PONG\r\n")); err != nil {
				return
			}
		}
	}
}
