package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/server"
)

// A handler mounted with Handle is served on the port's HTTP side, and
// its calls through Local are authenticated like any caller's: with the
// credentials it passes on, as their principal, and without them not at
// all.
func TestHandleAndLocalAuthenticateLikeTheAPI(t *testing.T) {
	var h *harness
	h = startWith(t, func(srv *server.Server) {
		srv.Handle("/probe", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			if v := r.Header.Get("Authorization"); v != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", v)
			}
			resp := h.types.response()
			if err := srv.Local().Invoke(ctx, echoMethod, h.types.request("s1"), resp); err != nil {
				http.Error(w, status.Code(err).String(), http.StatusUnauthorized)
				return
			}
			_, _ = io.WriteString(w, h.types.str(resp, "tenant")+" "+h.types.str(resp, "subject"))
		}))
	})
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return h.dial(ctx)
	}}}
	get := func(key string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, "http://harness/probe", nil)
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get(testKey)
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "acme ci-bot", body)
	code, body = get("")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body, "Unauthenticated")
	code, _ = get("wrong")
	assert.Equal(t, http.StatusUnauthorized, code)
}

// A path mounted with a trailing slash takes every path below it, and
// only those.
func TestHandleBelowAPath(t *testing.T) {
	h := startWith(t, func(srv *server.Server) {
		srv.Handle("/tree/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "tree "+r.URL.Path)
		}))
	})
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return h.dial(ctx)
	}}}
	get := func(path string) string {
		resp, err := client.Get("http://harness" + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	assert.Equal(t, "tree /tree/a/b:c", get("/tree/a/b:c"))
	assert.Equal(t, "tree /tree/", get("/tree/"))
	assert.NotContains(t, get("/treetop"), "tree ")
	assert.NotContains(t, get("/tree"), "tree ")
}
