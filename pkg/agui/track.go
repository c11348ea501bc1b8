package agui

// tracker keeps what a run's client holds open (messages, reasoning, tool
// calls, steps), from the AG-UI events themselves: the run closes it
// before it ends, and a run that starts part way through a turn (a
// reconnect, a resume) reopens it before its first live event.
type tracker struct {
	steps, texts, spans, reasoning, calls ordered
	callName, callParent                  map[string]string
}

func newTracker() *tracker {
	return &tracker{callName: map[string]string{}, callParent: map[string]string{}}
}

func (t *tracker) apply(e Event) {
	switch e.Type {
	case StepStarted:
		t.steps.add(e.StepName)
	case StepFinished:
		t.steps.remove(e.StepName)
	case TextMessageStart:
		t.texts.add(e.MessageID)
	case TextMessageEnd:
		t.texts.remove(e.MessageID)
	case ReasoningStart:
		t.spans.add(e.MessageID)
	case ReasoningEnd:
		t.spans.remove(e.MessageID)
	case ReasoningMessageStart:
		t.reasoning.add(e.MessageID)
	case ReasoningMessageEnd:
		t.reasoning.remove(e.MessageID)
	case ToolCallStart:
		t.calls.add(e.ToolCallID)
		t.callName[e.ToolCallID], t.callParent[e.ToolCallID] = e.ToolCallName, e.ParentMessageID
	case ToolCallEnd:
		t.calls.remove(e.ToolCallID)
	}
}

// reopen starts again what is open, with the same ids: the client
// continues the same messages and calls.
func (t *tracker) reopen() []Event {
	var out []Event
	for _, name := range t.steps.list() {
		out = append(out, Event{Type: StepStarted, StepName: name})
	}
	for _, id := range t.texts.list() {
		out = append(out, Event{Type: TextMessageStart, MessageID: id, Role: "assistant"})
	}
	for _, id := range t.spans.list() {
		out = append(out, Event{Type: ReasoningStart, MessageID: id})
	}
	for _, id := range t.reasoning.list() {
		out = append(out, Event{Type: ReasoningMessageStart, MessageID: id, Role: "reasoning"})
	}
	for _, id := range t.calls.list() {
		out = append(out, Event{Type: ToolCallStart, ToolCallID: id, ToolCallName: t.callName[id], ParentMessageID: t.callParent[id]})
	}
	return out
}

// closeAll ends what is open, innermost first: AG-UI refuses RUN_FINISHED
// while anything is.
func (t *tracker) closeAll() []Event {
	var out []Event
	for _, id := range t.reasoning.list() {
		out = append(out, Event{Type: ReasoningMessageEnd, MessageID: id})
	}
	for _, id := range t.spans.list() {
		out = append(out, Event{Type: ReasoningEnd, MessageID: id})
	}
	for _, id := range t.texts.list() {
		out = append(out, Event{Type: TextMessageEnd, MessageID: id})
	}
	for _, id := range t.calls.list() {
		out = append(out, Event{Type: ToolCallEnd, ToolCallID: id})
	}
	for _, name := range t.steps.list() {
		out = append(out, Event{Type: StepFinished, StepName: name})
	}
	return out
}
