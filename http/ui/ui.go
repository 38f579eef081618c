// Package ui serves the platform's browser UI at /ui/ and the Swagger UI
// for its OpenAPI document at /ui/api/.
//
// The browser UI (app/) is plain HTML, CSS and JavaScript modules written
// for this package; it talks only to the public /v2 API. Its one library,
// uPlot, comes from npm: `make ui` fetches it, pinned, into lib/. The
// Swagger UI files come from the npm package swagger-ui-dist, fetched by
// `make ui` into dist/. Neither is committed; everything is embedded into
// the binary with go:embed, so nothing is loaded from a CDN at run time.
// On a checkout where `make ui` has not run, dist/ and lib/ hold only their
// READMEs; the package still builds, Available reports false and the pages
// whose assets are missing say to run `make ui`.
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// dist holds whatever `make ui` put into dist/ (and the committed README).
//
//go:embed dist
var dist embed.FS

// lib holds the browser UI's libraries `make ui` put into lib/ (and the
// committed README).
//
//go:embed lib
var lib embed.FS

// page holds the files written for the Swagger UI: the page that starts
// it, its start-up script, and the page served when assets are missing.
//
//go:embed index.html swagger-initializer.js assets-missing.html
var page embed.FS

// app holds the browser UI written for this package.
//
//go:embed app
var app embed.FS

// Files copied from swagger-ui-dist by `make ui`. The first three are needed
// to render the Swagger UI; the favicon is served when present.
var (
	requiredDistFiles = []string{
		"swagger-ui-bundle.js",
		"swagger-ui-standalone-preset.js",
		"swagger-ui.css",
	}
	optionalDistFiles = []string{
		"favicon-32x32.png",
	}
	// Files copied from npm packages by scripts/fetch-ui-libs.sh, all needed
	// by the browser UI.
	requiredLibFiles = []string{
		"uPlot.iife.min.js",
		"uPlot.min.css",
	}
)

const (
	// Cache policy of the fetched files: their names carry no version, so
	// they are cached for a day, not forever.
	cacheDist = "public, max-age=86400"
	// Cache policy of this package's own files: revalidated by ETag, so a
	// new binary takes effect at once.
	cachePage = "no-cache"
	// The "not built" page must not outlive a rebuild with the assets.
	cacheMissing = "no-store"

	// apiPrefix is where the Swagger UI lives below /ui/.
	apiPrefix = "api/"

	// appCSP confines the browser UI's page: its own scripts and styles
	// only, requests to this origin (and WebSockets, for live values
	// later), no framing. A bearer token in sessionStorage is only as safe
	// as the page is free of foreign scripts.
	appCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
		"connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"
)

// asset is one file served under /ui/.
type asset struct {
	body         []byte
	contentType  string
	cacheControl string
	etag         string
	csp          string
	// gzipped is the body gzipped, made at the first request that takes
	// it, and nil when gzip would not shrink it; the func itself is nil
	// for content types not worth it (images). Text shrinks to a third:
	// the first load of /ui/ is 98 KiB instead of 257.
	gzipped func() *encoded
}

// encoded is an asset's body in a content encoding, with an ETag of its
// own: a cache must not answer one encoding's validator with the other.
type encoded struct {
	body []byte
	etag string
}

// site is the set of files served under /ui/, keyed by their path below
// /ui/ ("" is the page at /ui/ itself, "api/" the Swagger UI's page).
type site struct {
	swagger bool // the Swagger UI assets are there
	libs    bool // the browser UI's libraries are there
	assets  map[string]*asset
}

func (s *site) available() bool { return s.swagger && s.libs }

var defaultSite = sync.OnceValue(func() *site {
	distFS, err := fs.Sub(dist, "dist")
	if err != nil {
		panic("ui: " + err.Error()) // cannot happen: "dist" is a valid path
	}
	libFS, err := fs.Sub(lib, "lib")
	if err != nil {
		panic("ui: " + err.Error())
	}
	return newSite(distFS, libFS)
})

// Available reports whether the fetched assets (Swagger UI and the browser
// UI's libraries) were embedded, that is whether `make ui` ran before the
// build. When it is false, /ui/ or /ui/api/ serves a page saying to run
// `make ui` instead.
func Available() bool {
	return defaultSite().available()
}

// Register mounts the UIs on r: GET (and HEAD) /ui redirects to /ui/, /ui/
// serves the browser UI, /ui/api/ the Swagger UI on /v2/openapi.json, and
// /ui/<file> the embedded assets. Unknown files under /ui/ are answered
// with fiber.ErrNotFound.
func Register(r fiber.Router) {
	register(r, defaultSite())
}

func register(r fiber.Router, s *site) {
	r.Get("/ui", s.handle)
	r.Get("/ui/*", s.handle)
}

// newSite builds the served files from the swagger-ui-dist files in distFS
// and the libraries in libFS (each at its root), and this package's own
// files.
func newSite(distFS, libFS fs.FS) *site {
	s := &site{swagger: allExist(distFS, requiredDistFiles), libs: allExist(libFS, requiredLibFiles), assets: map[string]*asset{}}
	missing := newAsset(page, "assets-missing.html", cacheMissing)

	if s.swagger {
		index := newAsset(page, "index.html", cachePage)
		s.assets[apiPrefix] = index
		s.assets[apiPrefix+"index.html"] = index
		s.assets[apiPrefix+"swagger-initializer.js"] = newAsset(page, "swagger-initializer.js", cachePage)
		for _, name := range requiredDistFiles {
			s.assets[apiPrefix+name] = newAsset(distFS, name, cacheDist)
		}
		for _, name := range optionalDistFiles {
			if _, err := fs.Stat(distFS, name); err == nil {
				s.assets[apiPrefix+name] = newAsset(distFS, name, cacheDist)
			}
		}
	} else {
		s.assets[apiPrefix] = missing
		s.assets[apiPrefix+"index.html"] = missing
	}

	if !s.libs {
		// The app's own files are not served half: the page never loads them.
		s.assets[""] = missing
		s.assets["index.html"] = missing
		return s
	}
	for _, name := range requiredLibFiles {
		s.assets["lib/"+name] = newAsset(libFS, name, cacheDist)
	}
	err := fs.WalkDir(app, "app", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		a := newAsset(app, p, cachePage)
		if path.Ext(p) == ".html" {
			a.csp = appCSP
		}
		s.assets[strings.TrimPrefix(p, "app/")] = a
		return nil
	})
	if err != nil {
		panic("ui: " + err.Error()) // cannot happen: embedded files are readable
	}
	s.assets[""] = s.assets["index.html"]
	return s
}

func allExist(fsys fs.FS, names []string) bool {
	for _, name := range names {
		if _, err := fs.Stat(fsys, name); err != nil {
			return false
		}
	}
	return true
}

func newAsset(fsys fs.FS, name, cacheControl string) *asset {
	body, err := fs.ReadFile(fsys, name)
	if err != nil {
		// Only embedded files that were checked to exist are read.
		panic("ui: " + err.Error())
	}
	sum := sha256.Sum256(body)
	a := &asset{
		body:         body,
		contentType:  contentType(name),
		cacheControl: cacheControl,
		etag:         `"` + hex.EncodeToString(sum[:16]) + `"`,
	}
	if compressible(a.contentType) {
		a.gzipped = sync.OnceValue(func() *encoded { return gzipBody(a.body, a.etag) })
	}
	return a
}

// compressible tells the content types worth gzipping: text, not images
// that are compressed already.
func compressible(contentType string) bool {
	return strings.HasPrefix(contentType, "text/") || strings.HasPrefix(contentType, "image/svg") ||
		strings.HasPrefix(contentType, "application/json") || strings.HasPrefix(contentType, "application/javascript")
}

// gzipBody gzips body; nil when that does not make it smaller.
func gzipBody(body []byte, etag string) *encoded {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level: no error
	_, _ = zw.Write(body)                                    // a bytes.Buffer does not fail
	_ = zw.Close()
	if buf.Len() >= len(body) {
		return nil
	}
	return &encoded{body: buf.Bytes(), etag: strings.TrimSuffix(etag, `"`) + `-gzip"`}
}

// acceptsGzip tells whether an Accept-Encoding header value accepts gzip:
// named with a q above 0, or not named and * accepted (RFC 9110 12.5.3).
func acceptsGzip(acceptEncoding string) bool {
	star := false
	for _, part := range strings.Split(acceptEncoding, ",") {
		coding, params, _ := strings.Cut(part, ";")
		accepted := true
		if q, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(params)), "q="); ok {
			v, err := strconv.ParseFloat(q, 64)
			accepted = err == nil && v > 0
		}
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip":
			return accepted
		case "*":
			star = accepted
		}
	}
	return star
}

func contentType(name string) string {
	switch ext := path.Ext(name); ext {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".png":
		return "image/png"
	case ".svg":
		return "image/svg+xml"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return "application/octet-stream"
	}
}

func (s *site) handle(c *fiber.Ctx) error {
	rest := c.Params("*")
	slash := strings.HasSuffix(c.Path(), "/")
	if slash && rest != "" && !strings.HasSuffix(rest, "/") {
		// fiber leaves the trailing slash out of the wildcard (not
		// strict routing): /ui/api/ gives "api".
		rest += "/"
	}
	if (rest == "" || rest+"/" == apiPrefix) && !slash {
		// /ui -> /ui/ and /ui/api -> /ui/api/, so that the pages'
		// relative asset URLs resolve below them. c.Path() keeps any
		// prefix of a group r is part of.
		loc := c.Path() + "/"
		if q := c.Request().URI().QueryString(); len(q) > 0 {
			loc += "?" + string(q)
		}
		return c.Redirect(loc, fiber.StatusMovedPermanently)
	}

	a, ok := s.assets[rest]
	if !ok {
		return fiber.ErrNotFound
	}
	body, etag := a.body, a.etag
	if a.gzipped != nil {
		c.Vary(fiber.HeaderAcceptEncoding)
		if acceptsGzip(c.Get(fiber.HeaderAcceptEncoding)) {
			if gz := a.gzipped(); gz != nil {
				body, etag = gz.body, gz.etag
				c.Set(fiber.HeaderContentEncoding, "gzip")
			}
		}
	}
	c.Set(fiber.HeaderContentType, a.contentType)
	c.Set(fiber.HeaderCacheControl, a.cacheControl)
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	if a.csp != "" {
		c.Set(fiber.HeaderContentSecurityPolicy, a.csp)
		c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	}
	if etagMatches(c.Get(fiber.HeaderIfNoneMatch), etag) {
		c.Status(fiber.StatusNotModified)
		return nil
	}
	// The body is immutable (embedded, or gzipped once), so it need not
	// be copied.
	c.Response().SetBodyRaw(body)
	return nil
}

// etagMatches reports whether an If-None-Match header value names etag.
func etagMatches(ifNoneMatch, etag string) bool {
	if ifNoneMatch == "" {
		return false
	}
	for _, tag := range strings.Split(ifNoneMatch, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}
