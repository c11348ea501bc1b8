package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A feature of nats-server the log relies on and the release that brought
// it. The minimum version is the highest of them; a feature added to the
// log adds its line here.
type serverFeature struct {
	what    string
	version string
}

var serverFeatures = []serverFeature{
	{"consumers with several filter subjects (projectors, subscriptions)", "2.10.0"},
	{"batch direct gets (loading an aggregate from its subject)", "2.11.0"},
}

// MinServerVersion is the oldest nats-server the log works with.
func MinServerVersion() string {
	v := "0.0.0"
	for _, f := range serverFeatures {
		if compareVersions(f.version, v) > 0 {
			v = f.version
		}
	}
	return v
}

// ErrUnfitServer reports a NATS server the log cannot work with.
var ErrUnfitServer = errors.New("eventlog: unfit NATS server")

// CheckServer fails with ErrUnfitServer, naming the version found and the
// version needed (and what needs it), when the connected server is older
// than MinServerVersion or has JetStream disabled for this account. Open
// calls it first, so a service stops at start rather than loop on
// errors later.
func CheckServer(ctx context.Context, nc *nats.Conn) error {
	found := nc.ConnectedServerVersion()
	if need := MinServerVersion(); compareVersions(found, need) < 0 {
		var missing []string
		for _, f := range serverFeatures {
			if compareVersions(found, f.version) < 0 {
				missing = append(missing, f.what+" since "+f.version)
			}
		}
		return fmt.Errorf("%w: nats-server %s at %s is too old: need %s or later (%s)",
			ErrUnfitServer, found, nc.ConnectedUrlRedacted(), need, strings.Join(missing, "; "))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("eventlog: jetstream: %w", err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return fmt.Errorf("%w: nats-server %s at %s has JetStream disabled (start it with -js, or enable it for this account): %v",
				ErrUnfitServer, found, nc.ConnectedUrlRedacted(), err)
		}
		return fmt.Errorf("eventlog: JetStream account info from nats-server %s: %w", found, err)
	}
	return nil
}

// compareVersions compares dotted numeric versions ("2.10.3", "v2.11.0",
// "2.12.0-RC.1": a suffix is ignored), -1, 0 or 1.
func compareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := range 3 {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func versionParts(v string) [3]int {
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+ "); i >= 0 {
		v = v[:i]
	}
	var out [3]int
	for i, p := range strings.SplitN(v, ".", 3) {
		n, err := strconv.Atoi(p)
		if err != nil {
			break
		}
		out[i] = n
	}
	return out
}
