package http

import (
	"sort"
	"strings"
	"testing"
)

// Helpers of the admin endpoint tests (api.md 4.1-4.3), also used by other tests.

// adAt walks a dotted path ("resource.project.name") through decoded JSON.
func adAt(t *testing.T, v any, path string) any {
	t.Helper()
	cur := v
	for _, seg := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s: not an object at %q in %v", path, seg, v)
		}
		if cur, ok = m[seg]; !ok {
			t.Fatalf("%s: no field %q in %v", path, seg, m)
		}
	}
	return cur
}

// adStr reads a string at a dotted path.
func adStr(t *testing.T, v any, path string) string {
	t.Helper()
	s, ok := adAt(t, v, path).(string)
	if !ok {
		t.Fatalf("%s: not a string in %v", path, v)
	}
	return s
}

// adList reads an array of objects at a dotted path; path "" means v
// itself is the array.
func adList(t *testing.T, v any, path string) []map[string]any {
	t.Helper()
	cur := v
	if path != "" {
		cur = adAt(t, v, path)
	}
	raw, ok := cur.([]any)
	if !ok {
		t.Fatalf("%s: not an array: %v", path, cur)
	}
	out := make([]map[string]any, 0, len(raw))
	for _, x := range raw {
		m, ok := x.(map[string]any)
		if !ok {
			t.Fatalf("%s: element is not an object: %v", path, x)
		}
		out = append(out, m)
	}
	return out
}

// adIDs lists the id fields of objects.
func adIDs(t *testing.T, list []map[string]any) []int64 {
	t.Helper()
	ids := make([]int64, 0, len(list))
	for _, m := range list {
		ids = append(ids, num(t, m, "id"))
	}
	return ids
}

func adHas(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// adInts reads an array of integers at a dotted path, sorted.
func adInts(t *testing.T, v any, path string) []int64 {
	t.Helper()
	raw, ok := adAt(t, v, path).([]any)
	if !ok {
		t.Fatalf("%s: not an array in %v", path, v)
	}
	out := make([]int64, 0, len(raw))
	for _, x := range raw {
		f, ok := x.(float64)
		if !ok {
			t.Fatalf("%s: element is not a number: %v", path, x)
		}
		out = append(out, int64(f))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func adSameInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// adCatalog is GET /v2/meta/endpoints.
func (e *testEnv) adCatalog() []map[string]any {
	e.t.Helper()
	return adList(e.t, e.do("GET", "/v2/meta/endpoints", nil, nil).want(e.t, 200).List, "")
}

// adRole finds a role by id in a list, nil when absent.
func adRole(t *testing.T, roles []map[string]any, id int64) map[string]any {
	t.Helper()
	for _, r := range roles {
		if num(t, r, "id") == id {
			return r
		}
	}
	return nil
}

// adWantOp checks a success envelope with the given operation.
func adWantOp(t *testing.T, r resp, op string) map[string]any {
	t.Helper()
	res := r.resource(t)
	if r.JSON["operation"] != op {
		t.Fatalf("expected operation %q, got %v: %s", op, r.JSON["operation"], r.Body)
	}
	return res
}
