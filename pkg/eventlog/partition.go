package eventlog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Partitions of the log (docs/architecture.md, "Partitions";
// docs/adr/0013-partitions-of-the-log.md).
//
// One stream has one leader, which every append goes through. With
// Config.Partitions = P > 1 the log is P streams; a session's events, and
// every aggregate of it, live in partition PartitionOf(tenant, session), so
// a command's atomic batch and its expected subject sequence stay within one
// stream, and order and cursors within a session are unchanged.
//
// Positions. What the log hands out as an event's sequence (Record,
// Appended, LastSequence, Bounds) is a position that says which partition
// it is of: j*P + k for partition-local position j of partition k, where
// j numbers the slots of the stream's messages (slots.go: a message at
// stream sequence seq holds j = seq*S .. seq*S+S-1; S = 1 for a log made
// before command messages, whose positions are its stream sequences times
// P plus k). Positions of one partition grow with its sequence, so "after
// position x" (x+1 as a start, checkpoint > x) means what it meant;
// positions of different partitions are not ordered. Readers and writers
// give positions back as they got them; the log turns them into the
// stream's sequences.

// MaxPartitions bounds Config.Partitions: each partition costs every
// consuming process a consumer per projector feed and fan-out hub.
const MaxPartitions = 64

// metaPartitions is the stream metadata key recording the partition count
// the log was made with.
const metaPartitions = "agentruntime.partitions"

// Partitions is the number of streams of the log.
func (l *Log) Partitions() int { return l.cfg.Partitions }

// Partition is a view of the k-th partition: its Subscribe, Read, History,
// Head and Bounds read that stream, with filters across partitions (the
// whole log, a tenant, a kind) confined to it, and its Subjects build
// filters of it. Appends go to each aggregate's own partition, as on the
// whole log. Consumers that follow the log (projectors, reactors, the
// fan-out hub) run one loop per partition on these views.
// The same view is returned for the same partition, so views compare
// equal (a consumer's feed is found by its log).
func (l *Log) Partition(k int) *Log {
	if k < 0 || k >= l.cfg.Partitions {
		panic(fmt.Sprintf("eventlog: partition %d of %d", k, l.cfg.Partitions))
	}
	return l.views[k]
}

// View is the partition a view reads; ok is false for the whole log.
func (l *Log) View() (k int, ok bool) { return l.view - 1, l.view > 0 }

// makeViews makes the views Partition hands out.
func (l *Log) makeViews() {
	l.views = make([]*Log, l.cfg.Partitions)
	for k := range l.views {
		v := *l
		v.view = k + 1
		v.Subjects = l.Subjects.Partition(k)
		l.views[k] = &v
	}
	for _, v := range l.views {
		v.views = l.views
	}
}

// whole is the whole log of a view.
func (l *Log) whole() *Log {
	if l.view == 0 {
		return l
	}
	w := *l
	w.view, w.Subjects.view = 0, 0
	return &w
}

// PartitionOfPosition is the partition a position (an event's sequence as
// the log hands it out) is of. Position 0 (nothing yet) is of none: -1
// when the log is partitioned.
func (l *Log) PartitionOfPosition(pos uint64) int {
	p := uint64(l.cfg.Partitions)
	if p == 1 {
		return 0
	}
	if pos == 0 {
		return -1
	}
	return int(pos % p)
}

// Position is the position of partition-local position j of partition k
// (pos/P of a position of it, as cursors keep them).
func (l *Log) Position(k int, j uint64) uint64 {
	if j == 0 {
		return 0
	}
	return j*uint64(l.cfg.Partitions) + uint64(k)
}

// sequenceAt is the stream sequence of the message holding an exact
// position of partition k (an expected last sequence): a position of
// another partition is a bug.
//
// The last event of a message takes its last slot (slots.go): a position
// at another slot has an event after it in the same message, so it is
// never an aggregate's last, and expecting it is a conflict.
func (l *Log) sequenceAt(k int, pos uint64) (uint64, error) {
	if pos == 0 {
		return 0, nil
	}
	p := uint64(l.cfg.Partitions)
	if p > 1 && pos%p != uint64(k) {
		return 0, fmt.Errorf("%w: position %d is not of partition %d of %d", ErrInvalid, pos, k, p)
	}
	j := pos / p
	if j%l.slots != l.slots-1 {
		return 0, fmt.Errorf("%w: position %d is followed by another event of its command", ErrConflict, pos)
	}
	return j / l.slots, nil
}

// sequenceFrom is the stream sequence of partition k where a read "from
// pos" starts: the message holding the first partition-local position at
// or after pos. The reader skips the events of that message before pos.
func (l *Log) sequenceFrom(k int, pos uint64) uint64 {
	p := uint64(l.cfg.Partitions)
	if p == 1 || pos == 0 {
		return max(pos/l.slots, 1)
	}
	if pos <= uint64(k) {
		return 1
	}
	return max((pos-uint64(k)+p-1)/p/l.slots, 1)
}

// streamName is the k-th partition's stream.
func (l *Log) streamName(k int) string {
	if l.cfg.Partitions == 1 {
		return l.cfg.Stream
	}
	return l.cfg.Stream + "_" + strconv.Itoa(k)
}

// ErrPartitioned: an operation needs one partition and was given the whole
// of a partitioned log (a read across partitions has no single order).
// Callers read per partition (Log.Partition). A bug of the runtime's, so
// Internal.
var ErrPartitioned = fmt.Errorf("%w: the log is partitioned: read one partition (Log.Partition)", ErrInvalid)

// part is the partition a read with these filters goes to: the view's, or
// the one every filter names.
func (l *Log) part(filters []string) (int, error) {
	if l.view > 0 {
		return l.view - 1, nil
	}
	if l.cfg.Partitions == 1 {
		return 0, nil
	}
	k := -1
	for _, f := range filters {
		fk, ok := l.Subjects.partitionOfFilter(f)
		if !ok || (k >= 0 && fk != k) {
			return 0, fmt.Errorf("%w (filter %q)", ErrPartitioned, f)
		}
		k = fk
	}
	if k < 0 {
		return 0, ErrPartitioned
	}
	return k, nil
}

// confined are filters confined to partition k's stream.
func (l *Log) confined(filters []string, k int) []string {
	if l.cfg.Partitions == 1 || filters == nil {
		return filters
	}
	out := make([]string, len(filters))
	for i, f := range filters {
		out[i] = l.Subjects.confine(f, k)
	}
	return out
}

// aggregatePart is the partition of an aggregate.
func (l *Log) aggregatePart(agg Aggregate) int {
	return l.Subjects.PartitionOf(agg.Tenant, agg.Session)
}

// checkPartitions refuses to open a log whose streams were made with
// another partition count: changing it moves sessions between streams, a
// migration, not a restart.
//
// It answers the slots per message of the log (slots.go): those its
// streams were made with, or Config.Slots for a new log.
func (l *Log) checkPartitions(ctx context.Context) (int, error) {
	// The stream a log of another count would have made first.
	other := l.cfg.Stream + "_0"
	if l.cfg.Partitions > 1 {
		other = l.cfg.Stream
	}
	names := []string{other}
	for k := range l.cfg.Partitions {
		names = append(names, l.streamName(k))
	}
	slots := 0
	for _, name := range names {
		var info *jetstream.StreamInfo
		err := setupRetry(ctx, l.cfg, "stream "+name, func(actx context.Context) error {
			s, err := l.js.Stream(actx, name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				info = nil
				return nil
			}
			if err != nil {
				return err
			}
			info = s.CachedInfo()
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("eventlog: stream %s: %w", name, err)
		}
		if info == nil {
			continue
		}
		had := info.Config.Metadata[metaPartitions]
		if had == "" {
			had = "1"
		}
		if name == other || had != strconv.Itoa(l.cfg.Partitions) {
			return 0, fmt.Errorf("eventlog: the log was made with %s partition(s) (stream %s) and is opened with %d: "+
				"the partition count is fixed for a deployment (docs/scaling.md)", had, name, l.cfg.Partitions)
		}
		// A stream made before slots were recorded has one per message.
		n, err := strconv.Atoi(cmp.Or(info.Config.Metadata[metaSlots], "1"))
		if err != nil || n < 1 || n > DefaultSlots {
			return 0, fmt.Errorf("eventlog: stream %s records %s %q", name, metaSlots, info.Config.Metadata[metaSlots])
		}
		if slots != 0 && n != slots {
			return 0, fmt.Errorf("eventlog: the log's streams disagree on %s (%d and %d)", metaSlots, slots, n)
		}
		slots = n
	}
	if slots == 0 {
		slots = l.cfg.Slots
	}
	return slots, nil
}

// balanceLeaders asks the partitions' streams to move their leaders so that
// they spread over the cluster: JetStream picks each stream's leader at
// random among its peers, so three partitions on three nodes share a leader
// more often than not (7 times in 9), and then that node carries their
// appends alone. Each partition in turn gets the peer that leads the fewest
// partitions so far (ties: its current leader, then by name): the same
// answer for every replica that opens the log, so replicas opening at once
// agree, and a spread layout is left as it is. Best effort: a stream
// without a leader now (an election) keeps its own, and a failed step down
// is not an error of Open.
func (l *Log) balanceLeaders(ctx context.Context) {
	if l.cfg.Replicas < 2 || l.cfg.Partitions < 2 {
		return
	}
	// Streams just made (or a cluster just restarted) have replicas that
	// are not current yet, and only current ones may lead: wait a little
	// for them, so the first layout is spread too. A cluster with a node
	// down balances over the nodes it has once the wait is over.
	wait := time.NewTimer(balanceWait)
	defer wait.Stop()
	var infos []*jetstream.StreamInfo
	for {
		var complete bool
		infos, complete = l.streamInfos(ctx)
		if complete {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}
	load := map[string]int{}
	for k, info := range infos {
		if info == nil || info.Cluster == nil || info.Cluster.Leader == "" {
			continue
		}
		peers := []string{info.Cluster.Leader}
		for _, r := range info.Cluster.Replicas {
			if r.Current && !r.Offline {
				peers = append(peers, r.Name)
			}
		}
		// The current leader stays when it leads no more than any other
		// peer so far: a spread layout is left as it is (no step-down, so
		// no stall, when services restart on a balanced cluster).
		leader := info.Cluster.Leader
		slices.Sort(peers)
		other := func(peer string) int {
			if peer == leader {
				return 0
			}
			return 1
		}
		want := slices.MinFunc(peers, func(a, b string) int {
			return cmp.Or(cmp.Compare(load[a], load[b]), cmp.Compare(other(a), other(b)), strings.Compare(a, b))
		})
		load[want]++
		if want == leader {
			continue
		}
		req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": want}})
		actx, cancel := context.WithTimeout(ctx, l.cfg.AttemptTimeout)
		_, _ = l.js.Conn().RequestWithContext(actx, "$JS.API.STREAM.LEADER.STEPDOWN."+l.streamName(k), req)
		cancel()
	}
}

// balanceWait bounds how long opening a replicated, partitioned log waits
// for every stream's replicas to be current before it spreads the leaders.
const balanceWait = 5 * time.Second

// streamInfos are the partitions' stream infos (nil where one could not be
// read), and whether every stream has a leader and all its replicas
// current.
func (l *Log) streamInfos(ctx context.Context) ([]*jetstream.StreamInfo, bool) {
	infos := make([]*jetstream.StreamInfo, len(l.streams))
	complete := true
	for k, stream := range l.streams {
		actx, cancel := context.WithTimeout(ctx, l.cfg.AttemptTimeout)
		info, err := stream.Info(actx)
		cancel()
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
			complete = false
			continue
		}
		infos[k] = info
		current := 1
		for _, r := range info.Cluster.Replicas {
			if r.Current && !r.Offline {
				current++
			}
		}
		if current < l.cfg.Replicas {
			complete = false
		}
	}
	return infos, complete
}

// Of is the log a session's events are read from: the view of its
// partition, or the log itself when it has one partition. Its Bounds and
// Head are the session's partition's, so "caught up with the session" is
// a wait on one partition (projector.CaughtUp with Of).
func (l *Log) Of(tenant, session string) *Log {
	if l.cfg.Partitions <= 1 {
		return l
	}
	if session == "" {
		session = NoSession
	}
	return l.views[l.Subjects.PartitionOf(tenant, session)]
}

// Views are the logs a consumer of every partition reads: each partition's
// view, or the log itself when it has one partition or is a view.
func (l *Log) Views() []*Log {
	if _, ok := l.View(); ok || l.cfg.Partitions <= 1 {
		return []*Log{l}
	}
	return l.views
}
