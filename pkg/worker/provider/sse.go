package provider

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// readSSE calls fn with each server-sent event of body (its event field
// and its data, multi-line data joined) until fn says stop or the body
// ends; comments and id/retry fields are ignored. It returns whether fn
// said stop, and a read error as a stream_error (ctx's error when ctx
// ended).
func readSSE(ctx context.Context, body io.Reader, fn func(event, data string) (stop bool, err error)) (bool, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var event string
	var data strings.Builder
	dispatch := func() (bool, error) {
		if data.Len() == 0 && event == "" {
			return false, nil
		}
		stop, err := fn(event, data.String())
		event = ""
		data.Reset()
		return stop, err
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if stop, err := dispatch(); stop || err != nil {
				return stop, err
			}
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, &Error{Category: StreamError, Message: "stream broke: " + err.Error()}
	}
	return dispatch()
}

// post sends a JSON body and returns the response of a 2xx; any other
// status is mapped by refused.
func post(ctx context.Context, client *http.Client, url string, header http.Header, body any, refused func(*http.Response) *Error) (*http.Response, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, &Error{Category: BadRequest, Message: err.Error()}
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(raw)))
	if err != nil {
		return nil, &Error{Category: BadRequest, Message: err.Error()}
	}
	hreq.Header = header
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &Error{Category: Network, Message: err.Error()}
	}
	if res.StatusCode/100 != 2 {
		defer res.Body.Close()
		return nil, refused(res)
	}
	return res, nil
}

// retryAfter is a Retry-After header in seconds (0 when absent or a date).
func retryAfter(h http.Header) time.Duration {
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// checkCalls fills empty arguments with {} and refuses arguments that are
// not JSON.
func checkCalls(calls []ToolCall) error {
	for i, c := range calls {
		if c.Arguments == "" {
			calls[i].Arguments = "{}"
		}
		if !json.Valid([]byte(calls[i].Arguments)) {
			return &Error{Category: StreamError, Message: "tool call " + c.ID + " (" + c.Name + "): arguments are not JSON"}
		}
	}
	return nil
}
