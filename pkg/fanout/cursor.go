package fanout

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
)

// Cursor is where a subscription is in each partition of the log (ADR 0013
// §3): entry k is the last stream sequence of partition k it has looked at
// (0: none). Events of different partitions have no order between them, so
// a subscription across sessions resumes from one such entry per
// partition, not from one sequence.
type Cursor []uint64

// cursorPrefix versions the text form of a cursor.
const cursorPrefix = "v1:"

// maxCursorText bounds the text form: MaxPartitions uvarints of at most 10
// bytes each, in base64.
var maxCursorText = len(cursorPrefix) + base64.RawURLEncoding.EncodedLen(eventlog.MaxPartitions*binary.MaxVarintLen64)

// String is the cursor's text form, which clients keep and give back
// without looking inside: "v1:" and the unpadded base64url of the entries
// as uvarints.
func (c Cursor) String() string {
	buf := make([]byte, 0, len(c)*3)
	for _, seq := range c {
		buf = binary.AppendUvarint(buf, seq)
	}
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(buf)
}

// ErrCursor is the error of a text that is not a cursor.
var ErrCursor = errors.New("not a subscription cursor")

// ParseCursor reads a cursor's text form (String).
func ParseCursor(s string) (Cursor, error) {
	body, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok || len(s) > maxCursorText {
		return nil, ErrCursor
	}
	buf, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(buf) == 0 {
		return nil, ErrCursor
	}
	var c Cursor
	for len(buf) > 0 {
		seq, n := binary.Uvarint(buf)
		if n <= 0 {
			return nil, ErrCursor
		}
		c = append(c, seq)
		buf = buf[n:]
	}
	return c, nil
}

// Advance moves the cursor past position pos (an event's sequence on a log
// of len(c) partitions): its partition's entry becomes the event's stream
// sequence.
func (c Cursor) Advance(pos uint64) {
	if len(c) == 0 || pos == 0 {
		return
	}
	p := uint64(len(c))
	k := pos % p
	c[k] = max(c[k], pos/p)
}

// lastBefore is the last stream sequence of partition k of a log of p
// partitions before position pos: a member that resumes from pos has
// looked at every sequence up to it.
func lastBefore(p, k int, pos uint64) uint64 {
	if pos == 0 {
		return 0
	}
	if p == 1 {
		return pos - 1
	}
	if pos <= uint64(k) {
		return 0
	}
	// The first stream sequence at or after pos, minus one.
	return (pos-uint64(k)+uint64(p)-1)/uint64(p) - 1
}
