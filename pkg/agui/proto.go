package agui

import "io"

// protoMediaType is AG-UI's binary encoding.
const protoMediaType = "application/vnd.ag-ui.event+proto"

type protoEncoder struct{}

func (protoEncoder) contentType() string { return protoMediaType }

func (protoEncoder) event(w io.Writer, e Event, _ string) error { return nil }

func (protoEncoder) keepalive(io.Writer) error { return nil }
