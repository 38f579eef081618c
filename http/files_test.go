package http

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	nethttp "net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/files"
	"github.com/openbdp/bdp/files/filestest"
)

// The document store through real HTTP, on a real S3 store (filestest)
// and a real PostgreSQL: every route in both spaces, isolation, links.

// filesEnv is a server with a document store.
type filesEnv struct {
	*testEnv
	objects *files.Objects
}

func newFilesEnv(t *testing.T) *filesEnv {
	t.Helper()
	objects := filestest.Open(t)
	e := startTestEnvDeps(t, testCluster.TestDatabase(t), func(*actors.EngineConfig) {}, func(d *Deps) func(context.Context) {
		d.Files = files.NewService(d.Store, objects, d.Log)
		return nil
	})
	return &filesEnv{e, objects}
}

// fileSpaceOf is one space as the tests address it.
type fileSpaceOf struct {
	name   string // company or project, the object keys' first segment
	base   string // /v2/company or /v2/project/{id}
	owner  int64
	as     cred
	prefix string // of its object keys
}

func (e *filesEnv) spaces(c company) []fileSpaceOf {
	pid, _ := e.newProject(c.Admin)
	return []fileSpaceOf{
		{"company", "/v2/company", c.ID, c.Admin, fmt.Sprintf("company/%d/", c.ID)},
		{"project", fmt.Sprintf("/v2/project/%d", pid), pid, c.Admin, fmt.Sprintf("project/%d/", pid)},
	}
}

// multipartFile is a multipart body whose field holds content under the
// filename name.
func multipartFile(field, name string, content []byte) (string, []byte) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.WriteField("note", "a field before the file")
	fw, _ := w.CreateFormFile(field, name)
	_, _ = fw.Write(content)
	_ = w.Close()
	return w.FormDataContentType(), b.Bytes()
}

// upload sends content as the file name to base/file?query.
func (e *filesEnv) upload(method string, sp fileSpaceOf, query, name string, content []byte) resp {
	e.t.Helper()
	ct, body := multipartFile("file", name, content)
	return e.send(method, sp.base+"/file"+query, sp.as, ct, bytes.NewReader(body))
}

// download fetches a link from the object store.
func download(t *testing.T, link string) (int, string, []byte) {
	t.Helper()
	res, err := nethttp.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Type"), body
}

// content of the file at path in sp, through a link.
func (e *filesEnv) content(sp fileSpaceOf, path string) string {
	e.t.Helper()
	r := e.do("GET", sp.base+"/file?path="+url.QueryEscape(path), sp.as, nil).want(e.t, 200)
	status, _, body := download(e.t, r.JSON["download_link"].(string))
	if status != 200 {
		e.t.Fatalf("download of %s: %d %s", path, status, body)
	}
	return string(body)
}

// state is what a space holds, seen through the routes, the object store
// and the reservations table: a failed request must leave it as it was.
func (e *filesEnv) state(sp fileSpaceOf) string {
	e.t.Helper()
	q := e.do("GET", sp.base+"/quota", sp.as, nil).want(e.t, 200)
	list := e.do("GET", sp.base+"/files?per_page=1000", sp.as, nil).want(e.t, 200)
	var paths []string
	for _, it := range adList(e.t, list.JSON, "items") {
		paths = append(paths, fmt.Sprintf("%s:%d", it["path"], num(e.t, it, "size_bytes")))
	}
	var objects []string
	if err := e.objects.Keys(context.Background(), sp.prefix, func(key string, size int64, _ time.Time) error {
		objects = append(objects, fmt.Sprintf("%d", size))
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	slices.Sort(objects) // their keys are random
	pending := e.sqlFloat(`SELECT count(*) FROM file_reservations WHERE space = $1 AND owner_id = $2`, sp.name, sp.owner)
	return fmt.Sprintf("used %d/%d; files %v; objects %v; reservations %v", num(e.t, q.JSON, "files.quota_used.files"),
		num(e.t, q.JSON, "files.quota_used.space_bytes"), paths, objects, pending)
}

func TestFilesRoutesInBothSpaces(t *testing.T) {
	e := newFilesEnv(t)
	c := e.newCompany()
	spaces := e.spaces(c)
	for _, sp := range spaces {
		t.Run(sp.name, func(t *testing.T) {
			q := e.do("GET", sp.base+"/quota?service=files", sp.as, nil).want(t, 200)
			for path, want := range map[string]int64{"files.quota_limits.files": 1000, "files.quota_limits.space_bytes": 1 << 30,
				"files.quota_limits.file_size_bytes": 100 << 20, "files.quota_used.files": 0, "files.quota_available.space_bytes": 1 << 30} {
				if got := num(t, q.JSON, path); got != want {
					t.Fatalf("%s = %d, want %d: %s", path, got, want, q.Body)
				}
			}

			r := e.upload("POST", sp, "?folder=reports/2026", "audit.pdf", []byte("first version")).want(t, 201)
			if res := adWantOp(t, r, "create"); res["path"] != "reports/2026/audit.pdf" {
				t.Fatalf("upload answer %s", r.Body)
			}
			e.upload("POST", sp, "", "Top.txt", []byte("top")).want(t, 201)
			e.upload("POST", sp, "", "top.txt", []byte("lower")).want(t, 201) // names are case-sensitive

			list := e.do("GET", sp.base+"/files", sp.as, nil).want(t, 200)
			items := adList(t, list.JSON, "items")
			if len(items) != 3 || items[0]["path"] != "Top.txt" || items[2]["path"] != "top.txt" || num(t, items[1], "size_bytes") != 13 {
				t.Fatalf("list %s", list.Body)
			}
			if _, err := time.Parse(time.RFC3339, items[1]["last_modified"].(string)); err != nil {
				t.Fatalf("last_modified: %v", err)
			}
			if m := list.JSON["meta"].(map[string]any); num(t, m, "total_items") != 3 || num(t, m, "current_page") != 1 ||
				num(t, m, "items_per_page") != 100 || num(t, m, "total_pages") != 1 {
				t.Fatalf("meta %v", m)
			}
			page := e.do("GET", sp.base+"/files?search=TOP&page=2&per_page=1", sp.as, nil).want(t, 200)
			if items := adList(t, page.JSON, "items"); len(items) != 1 || items[0]["path"] != "top.txt" || num(t, page.JSON, "meta.total_items") != 2 ||
				num(t, page.JSON, "meta.total_pages") != 2 {
				t.Fatalf("search page %s", page.Body)
			}

			before := time.Now()
			link := e.do("GET", sp.base+"/file?path=reports/2026/audit.pdf", sp.as, nil).want(t, 200)
			until, err := time.Parse(time.RFC3339, link.JSON["valid_until"].(string))
			if err != nil || until.Before(before.Add(10*time.Minute-time.Second)) || until.After(time.Now().Add(10*time.Minute+time.Second)) {
				t.Fatalf("valid_until of the default 10m link: %s (%v)", link.Body, err)
			}
			if link.JSON["path"] != "reports/2026/audit.pdf" || num(t, link.JSON, "size_bytes") != 13 || link.JSON["last_modified"] == nil {
				t.Fatalf("link answer %s", link.Body)
			}
			if status, _, body := download(t, link.JSON["download_link"].(string)); status != 200 || string(body) != "first version" {
				t.Fatalf("download: %d %q", status, body)
			}
			week := e.do("GET", sp.base+"/file?path=top.txt&expiry=7d", sp.as, nil).want(t, 200)
			if until, _ := time.Parse(time.RFC3339, week.JSON["valid_until"].(string)); until.Before(time.Now().Add(7*24*time.Hour - time.Minute)) {
				t.Fatalf("a 7d link valid until %s", until)
			}

			r = e.upload("PUT", sp, "?folder=reports/2026", "audit.pdf", []byte("second, longer version")).want(t, 201)
			if res := adWantOp(t, r, "update"); res["path"] != "reports/2026/audit.pdf" {
				t.Fatalf("replace answer %s", r.Body)
			}
			if got := e.content(sp, "reports/2026/audit.pdf"); got != "second, longer version" {
				t.Fatalf("after the replace: %q", got)
			}
			e.upload("PUT", sp, "?folder=", "top.txt", []byte("LOWER")).want(t, 201) // folder= is the top level
			if got := e.content(sp, "top.txt"); got != "LOWER" {
				t.Fatalf("after the top-level replace: %q", got)
			}
			// The replaced objects are gone: one object per file.
			if st := e.state(sp); st != "used 3/30; files [Top.txt:3 reports/2026/audit.pdf:22 top.txt:5]; objects [22 3 5]; reservations 0" {
				t.Fatalf("state after the replaces: %s", st)
			}

			r = e.do("DELETE", sp.base+"/file?path=reports/2026/audit.pdf", sp.as, nil).want(t, 200)
			if res := adWantOp(t, r, "delete"); res["path"] != "reports/2026/audit.pdf" {
				t.Fatalf("delete answer %s", r.Body)
			}
			e.do("DELETE", sp.base+"/file?path=Top.txt", sp.as, nil).want(t, 200)
			e.do("DELETE", sp.base+"/file?path=top.txt", sp.as, nil).want(t, 200)
			if st := e.state(sp); st != "used 0/0; files []; objects []; reservations 0" {
				t.Fatalf("state after deleting everything: %s", st)
			}
		})
	}

	// The same path in the company space and a project space: two files.
	for i, sp := range spaces {
		e.upload("POST", sp, "?folder=shared", "same.txt", []byte("in "+sp.name)).want(t, 201)
		if i == 0 {
			// Not visible in the other space before it has its own.
			e.do("GET", spaces[1].base+"/file?path=shared/same.txt", spaces[1].as, nil).wantError(t, 404)
		}
	}
	for _, sp := range spaces {
		if got := e.content(sp, "shared/same.txt"); got != "in "+sp.name {
			t.Fatalf("%s space holds %q", sp.name, got)
		}
	}
	e.do("DELETE", spaces[0].base+"/file?path=shared/same.txt", spaces[0].as, nil).want(t, 200)
	if got := e.content(spaces[1], "shared/same.txt"); got != "in project" {
		t.Fatalf("deleting the company's file took the project's: %q", got)
	}
}

// Another company sees nothing of a company's files; a user needs a
// company role for the company space and the project's grant for a
// project space; TagAuths play no part.
func TestFilesAccess(t *testing.T) {
	e := newFilesEnv(t)
	a, b := e.newCompany(), e.newCompany()
	aSpaces := e.spaces(a)
	for _, sp := range aSpaces {
		e.upload("POST", sp, "", "secret.txt", []byte("a's secret")).want(t, 201)
	}
	aCompany, aProject := aSpaces[0], aSpaces[1]
	before := []string{e.state(aCompany), e.state(aProject)}

	// Company b's admin: a's project answers 403, b's company space is b's own.
	other := aProject
	other.as = b.Admin
	for _, tc := range []struct{ method, path string }{
		{"GET", "/quota"}, {"GET", "/files"}, {"GET", "/file?path=secret.txt"}, {"DELETE", "/file?path=secret.txt"},
	} {
		e.do(tc.method, other.base+tc.path, b.Admin, nil).wantError(t, 403)
	}
	e.upload("POST", other, "", "intruder.txt", []byte("x")).wantError(t, 403)
	e.upload("PUT", other, "?folder=", "secret.txt", []byte("x")).wantError(t, 403)
	bCompany := fileSpaceOf{"company", "/v2/company", b.ID, b.Admin, fmt.Sprintf("company/%d/", b.ID)}
	if list := e.do("GET", "/v2/company/files", b.Admin, nil).want(t, 200); len(adList(t, list.JSON, "items")) != 0 {
		t.Fatalf("company b lists %s", list.Body)
	}
	e.do("GET", "/v2/company/file?path=secret.txt", b.Admin, nil).wantError(t, 404)
	e.do("DELETE", "/v2/company/file?path=secret.txt", b.Admin, nil).wantError(t, 404)
	e.upload("PUT", bCompany, "?folder=", "secret.txt", []byte("x")).wantError(t, 404)
	e.upload("POST", bCompany, "", "secret.txt", []byte("b's own")).want(t, 201)
	if got := e.content(bCompany, "secret.txt"); got != "b's own" {
		t.Fatalf("company b reads %q", got)
	}

	// A user of a without roles: 403 in both spaces. With a project role
	// granting the file endpoints: that project only, not the company
	// space, not another project.
	u, uid := e.newUser(a)
	member := aProject
	member.as = u
	e.do("GET", "/v2/company/files", u, nil).wantError(t, 403)
	e.do("GET", aProject.base+"/files", u, nil).wantError(t, 403)
	var fileEndpoints []int32
	for _, r := range e.srv.routes {
		if strings.HasPrefix(r.Path, "/v2/project/{project_id}/file") || r.Path == "/v2/project/{project_id}/quota" {
			fileEndpoints = append(fileEndpoints, r.ID)
		}
	}
	role := rbCreateProjectRole(e.testEnv, a.Admin, aProject.owner, fileEndpoints) // no TagAuths: files need none
	rbAssignProjectRole(e.testEnv, a.Admin, aProject.owner, role, uid)
	if got := e.content(member, "secret.txt"); got != "a's secret" {
		t.Fatalf("the member reads %q", got)
	}
	e.upload("POST", member, "?folder=by-member", "note.txt", []byte("hi")).want(t, 201)
	e.do("GET", "/v2/company/files", u, nil).wantError(t, 403)
	e.do("GET", "/v2/company/quota", u, nil).wantError(t, 403)
	p2, _ := e.newProject(a.Admin)
	e.do("GET", fmt.Sprintf("/v2/project/%d/files", p2), u, nil).wantError(t, 403)
	e.do("DELETE", "/v2/project/999999/file?path=secret.txt", u, nil).wantError(t, 403) // no such project: 403 as well
	e.do("DELETE", aProject.base+"/file?path=by-member/note.txt", u, nil).want(t, 200)

	if after := []string{e.state(aCompany), e.state(aProject)}; after[0] != before[0] || after[1] != before[1] {
		t.Fatalf("a's spaces changed:\n%v\n%v", before, after)
	}
}

// A link answers until its expiry; then the object store answers 403 with
// its XML AccessDenied body, and a changed link 403 at once.
func TestFilesLinkExpires(t *testing.T) {
	e := newFilesEnv(t)
	sp := e.spaces(e.newCompany())[1]
	e.upload("POST", sp, "", "report.csv", []byte("a,b\n1,2\n")).want(t, 201)
	r := e.do("GET", sp.base+"/file?path=report.csv&expiry=1s", sp.as, nil).want(t, 200)
	link := r.JSON["download_link"].(string)
	until, err := time.Parse(time.RFC3339Nano, r.JSON["valid_until"].(string))
	if err != nil || time.Until(until) > 2*time.Second {
		t.Fatalf("valid_until %v (%v)", r.JSON["valid_until"], err)
	}
	if status, _, body := download(t, link); status != 200 || string(body) != "a,b\n1,2\n" {
		t.Fatalf("fresh link: %d %q", status, body)
	}
	tampered := strings.Replace(link, "report.csv", "report.csw", 1)
	if u, _ := url.Parse(link); u != nil {
		q := u.Query()
		q.Set("X-Amz-Expires", "3600")
		u.RawQuery = q.Encode()
		tampered = u.String()
	}
	if status, _, body := download(t, tampered); status != 403 {
		t.Fatalf("a link with a longer expiry written in: %d %s", status, body)
	}
	time.Sleep(time.Until(until) + 1500*time.Millisecond)
	status, ctype, body := download(t, link)
	if status != 403 || !strings.Contains(ctype, "xml") || !strings.Contains(string(body), "<Code>AccessDenied</Code>") {
		t.Fatalf("expired link: %d %s %s", status, ctype, body)
	}
}
