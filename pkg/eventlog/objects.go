package eventlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
)

// ErrObjectNotFound: no object at that ref.
var ErrObjectNotFound = errors.New("eventlog: object not found")

const (
	objectScheme = "object://"
	previewBytes = 512
)

// PutObject stores large data (tool or process output, provider payloads,
// evidence packs) in the object bucket and returns the ref an event carries
// instead of the bytes. Storing under an existing name replaces it.
func (l *Log) PutObject(ctx context.Context, name, owner, mediaType string, data []byte) (*commonv1.OutputRef, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: object name is empty", ErrInvalid)
	}
	sum := sha256.Sum256(data)
	if _, err := l.objects.Put(ctx, jetstream.ObjectMeta{Name: name, Description: mediaType}, bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("eventlog: put object %s: %w", name, err)
	}
	return &commonv1.OutputRef{
		Uri:       objectScheme + l.cfg.ObjectBucket + "/" + name,
		Owner:     owner,
		MediaType: mediaType,
		SizeBytes: int64(len(data)),
		Sha256:    hex.EncodeToString(sum[:]),
		Preview:   preview(mediaType, data),
		Truncated: false,
	}, nil
}

// GetObject returns the bytes behind a ref's uri.
func (l *Log) GetObject(ctx context.Context, uri string) ([]byte, error) {
	prefix := objectScheme + l.cfg.ObjectBucket + "/"
	name, ok := strings.CutPrefix(uri, prefix)
	if !ok || name == "" {
		return nil, fmt.Errorf("%w: %q is not an object of bucket %s", ErrInvalid, uri, l.cfg.ObjectBucket)
	}
	data, err := l.objects.GetBytes(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrObjectNotFound, uri)
	}
	if err != nil {
		return nil, fmt.Errorf("eventlog: get object %s: %w", uri, err)
	}
	return data, nil
}

// preview is a display-safe head of textual content; binary data gets none.
func preview(mediaType string, data []byte) string {
	textual := strings.HasPrefix(mediaType, "text/") || strings.Contains(mediaType, "json") ||
		strings.Contains(mediaType, "xml") || strings.Contains(mediaType, "yaml")
	if !textual {
		return ""
	}
	head := data[:min(len(data), previewBytes)]
	// Do not cut a multi-byte character in half.
	for len(head) > 0 && !utf8.Valid(head) {
		head = head[:len(head)-1]
	}
	return string(head)
}
