// Package web owns the console's built assets: dist/ is the output of
// `npm run build` in this directory (committed, checked for drift by
// scripts/test-web) and embedded in the binary so `agentruntime dev` and
// `serve --console` need no files beside them (docs/console.md).
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed dist
var dist embed.FS

// Handler serves the console: index.html for "/" and the hashed-free
// asset names beside it. Screens are routed in the URL fragment, so no
// path other than the files exists. index.html is never cached (it names
// the app), the rest is revalidated by its modification-free ETag-less
// content through the default file server.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embed pattern guarantees dist exists
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		if r.URL.Path == "/" || strings.HasSuffix(r.URL.Path, ".html") {
			h.Set("Cache-Control", "no-cache")
		}
		files.ServeHTTP(w, r)
	})
}
