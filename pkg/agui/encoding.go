package agui

import (
	"encoding/json"
	"io"
)

// encoder writes events in one of AG-UI's encodings.
type encoder interface {
	contentType() string
	event(w io.Writer, e Event, id string) error
	// keepalive keeps an idle stream open through proxies.
	keepalive(w io.Writer) error
}

// sseEncoder is AG-UI's default: one JSON event per SSE data line. The SSE
// id is the event's cursor (Last-Event-ID resumes after it).
type sseEncoder struct{}

func (sseEncoder) contentType() string { return "text/event-stream" }

func (sseEncoder) event(w io.Writer, e Event, id string) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(raw)+len(id)+16)
	buf = append(buf, "id: "...)
	buf = append(buf, id...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, raw...)
	buf = append(buf, "\n\n"...)
	_, err = w.Write(buf)
	return err
}

func (sseEncoder) keepalive(w io.Writer) error {
	_, err := io.WriteString(w, ": keepalive\n\n")
	return err
}
