package http

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// GET /v2/meta/endpoints (api.md 4.1-4.3): the endpoint catalog that role grants refer to.

func TestMetaEndpointsCatalog(t *testing.T) {
	e := newTestEnv(t)

	// No credentials needed; bad ones do not matter either.
	for _, c := range []cred{nil, basic{"nobody@example.com", "wrong-password"}, bearer("garbage")} {
		r := e.do("GET", "/v2/meta/endpoints", c, nil).want(t, 200)
		if len(r.List) == 0 {
			t.Fatalf("empty catalog: %s", r.Body)
		}
	}

	eps := e.adCatalog()
	seen := map[int64]string{}
	byRoute := map[string]int64{}
	for _, ep := range eps {
		id := num(t, ep, "id")
		method, _ := ep["request_method"].(string)
		path, _ := ep["path"].(string)
		key := method + " " + path
		if prev, dup := seen[id]; dup {
			t.Fatalf("endpoint id %d used twice: %s and %s", id, prev, key)
		}
		seen[id] = key
		if id <= 0 {
			t.Fatalf("endpoint ids must be positive (0 means all): %v", ep)
		}
		switch method {
		case "GET", "POST", "PUT", "DELETE":
		default:
			t.Fatalf("bad request_method: %v", ep)
		}
		if !strings.HasPrefix(path, "/v2/") {
			t.Fatalf("path should be a /v2 template: %v", ep)
		}
		if _, dup := byRoute[key]; dup {
			t.Fatalf("route listed twice: %s", key)
		}
		byRoute[key] = id
	}
	for _, want := range []string{
		"GET /v2/company", "POST /v2/company/project", "POST /v2/project", "PUT /v2/project/{project_id}",
		"DELETE /v2/project/{project_id}", "GET /v2/user/projects", "GET /v2/project/{project_id}",
		"POST /v2/company/user", "POST /v2/user", "PUT /v2/user/password", "PUT /v2/user", "GET /v2/user", "DELETE /v2/user",
		"GET /v2/meta/endpoints", "POST /v2/project/{project_id}/role", "POST /v2/company/role",
		"PUT /v2/project/{project_id}/role/{role_id}", "PUT /v2/company/role/{role_id}",
		"POST /v2/project/{project_id}/role/{role_id}/user/{user_id}", "POST /v2/company/role/{role_id}/user/{user_id}",
		"DELETE /v2/project/{project_id}/role/{role_id}/user/{user_id}", "DELETE /v2/company/role/{role_id}/user/{user_id}",
		"DELETE /v2/project/{project_id}/role/{role_id}", "DELETE /v2/company/role/{role_id}", "DELETE /v2/company/roles/{role_id}",
		"GET /v2/project/{project_id}/roles",
	} {
		if _, ok := byRoute[want]; !ok {
			t.Errorf("catalog lacks %s", want)
		}
	}
	// Ids are stable: a second server on the same database (a restart)
	// hands out the same ones, so role grants survive restarts.
	srv2, err := New(context.Background(), Config{TokenSecret: bytes.Repeat([]byte("k"), 32), HashParams: fastHash},
		Deps{Store: e.store, Ingest: e.srv.ingest, Engine: e.srv.engine, Components: e.srv.components, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range srv2.routes {
		if id, ok := byRoute[r.Method+" "+r.Path]; !ok || id != int64(r.ID) {
			t.Errorf("after a restart %s %s has id %d, before %d", r.Method, r.Path, r.ID, id)
		}
	}
}
