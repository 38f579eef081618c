// Package ui serves the Swagger UI for the platform's OpenAPI document at
// /ui/.
//
// The Swagger UI files come from the npm package swagger-ui-dist. They are
// not committed: `make ui` fetches them into dist/, and they are embedded
// into the binary with go:embed, so nothing is loaded from a CDN at run time.
// On a checkout where `make ui` has not run, dist/ holds only its README; the
// package still builds, Available reports false and /ui/ serves a short page
// saying to run `make ui`.
package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"path"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// dist holds whatever `make ui` put into dist/ (and the committed README).
//
//go:embed dist
var dist embed.FS

// page holds the files written for this package: the page that starts
// Swagger UI, its start-up script, and the page served when the assets are
// missing.
//
//go:embed index.html swagger-initializer.js assets-missing.html
var page embed.FS

// Files copied from swagger-ui-dist by `make ui`. The first three are needed
// to render the UI; the favicon is served when present.
var (
	requiredDistFiles = []string{
		"swagger-ui-bundle.js",
		"swagger-ui-standalone-preset.js",
		"swagger-ui.css",
	}
	optionalDistFiles = []string{
		"favicon-32x32.png",
	}
)

const (
	// Cache policy of the swagger-ui-dist files: their names carry no
	// version, so they are cached for a day, not forever.
	cacheDist = "public, max-age=86400"
	// Cache policy of this package's own files: revalidated by ETag, so a
	// new binary takes effect at once.
	cachePage = "no-cache"
	// The "not built" page must not outlive a rebuild with the assets.
	cacheMissing = "no-store"
)

// asset is one file served under /ui/.
type asset struct {
	body         []byte
	contentType  string
	cacheControl string
	etag         string
}

// site is the set of files served under /ui/, keyed by their path below
// /ui/ ("" is the page at /ui/ itself).
type site struct {
	available bool
	assets    map[string]*asset
}

var defaultSite = sync.OnceValue(func() *site {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic("ui: " + err.Error()) // cannot happen: "dist" is a valid path
	}
	return newSite(sub, page)
})

// Available reports whether the Swagger UI assets were embedded, that is
// whether `make ui` ran before the build. When it is false, /ui/ serves a
// page saying to run `make ui` instead of the Swagger UI.
func Available() bool {
	return defaultSite().available
}

// Register mounts the Swagger UI on r: GET (and HEAD) /ui redirects to /ui/,
// /ui/ serves the page that loads the OpenAPI document at /v2/openapi.json,
// and /ui/<file> serves the embedded assets. Unknown files under /ui/ are
// answered with fiber.ErrNotFound.
func Register(r fiber.Router) {
	register(r, defaultSite())
}

func register(r fiber.Router, s *site) {
	r.Get("/ui", s.handle)
	r.Get("/ui/*", s.handle)
}

// newSite builds the served files from the swagger-ui-dist files in distFS
// (at its root) and this package's own files in pageFS.
func newSite(distFS, pageFS fs.FS) *site {
	s := &site{available: true, assets: map[string]*asset{}}
	for _, name := range requiredDistFiles {
		if _, err := fs.Stat(distFS, name); err != nil {
			s.available = false
			break
		}
	}

	if !s.available {
		missing := newAsset(pageFS, "assets-missing.html", cacheMissing)
		s.assets[""] = missing
		s.assets["index.html"] = missing
		return s
	}

	index := newAsset(pageFS, "index.html", cachePage)
	s.assets[""] = index
	s.assets["index.html"] = index
	s.assets["swagger-initializer.js"] = newAsset(pageFS, "swagger-initializer.js", cachePage)
	for _, name := range requiredDistFiles {
		s.assets[name] = newAsset(distFS, name, cacheDist)
	}
	for _, name := range optionalDistFiles {
		if _, err := fs.Stat(distFS, name); err == nil {
			s.assets[name] = newAsset(distFS, name, cacheDist)
		}
	}
	return s
}

func newAsset(fsys fs.FS, name, cacheControl string) *asset {
	body, err := fs.ReadFile(fsys, name)
	if err != nil {
		// Only embedded files that were checked to exist are read.
		panic("ui: " + err.Error())
	}
	sum := sha256.Sum256(body)
	return &asset{
		body:         body,
		contentType:  contentType(name),
		cacheControl: cacheControl,
		etag:         `"` + hex.EncodeToString(sum[:16]) + `"`,
	}
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
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return "application/octet-stream"
	}
}

func (s *site) handle(c *fiber.Ctx) error {
	rest := c.Params("*")
	if rest == "" && !strings.HasSuffix(c.Path(), "/") {
		// /ui -> /ui/, so that the page's relative asset URLs resolve
		// below /ui/. c.Path() keeps any prefix of a group r is part of.
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
	c.Set(fiber.HeaderContentType, a.contentType)
	c.Set(fiber.HeaderCacheControl, a.cacheControl)
	c.Set(fiber.HeaderETag, a.etag)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	if etagMatches(c.Get(fiber.HeaderIfNoneMatch), a.etag) {
		c.Status(fiber.StatusNotModified)
		return nil
	}
	// The body is immutable embedded data, so it need not be copied.
	c.Response().SetBodyRaw(a.body)
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
