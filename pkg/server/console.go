package server

import (
	"net/http"
	"strings"
)

// withConsole sends a browser's page and asset requests (GET or HEAD of a
// path that is not an RPC) to console and everything else to api, so the
// console and the API it calls share one origin and one port: no CORS, and
// the same authentication on every call the console makes. RPC paths are
// "/<package>.<Service>/<Method>"; Connect's GET for idempotent unary calls
// keeps going to api.
func withConsole(console, api http.Handler) http.Handler {
	if console == nil {
		return api
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && !isRPCPath(r.URL.Path) {
			console.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// isRPCPath reports whether path names a method: a first segment with a
// dot (the full service name) followed by a method segment.
func isRPCPath(path string) bool {
	svc, method, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return ok && strings.Contains(svc, ".") && method != "" && !strings.Contains(method, "/")
}
