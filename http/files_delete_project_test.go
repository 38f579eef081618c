package http

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Deleting a project deletes its files: their objects are gone from the
// store at once; the company's files and another project's stay.
func TestDeletingAProjectDeletesItsFiles(t *testing.T) {
	e := newFilesEnv(t)
	c := e.newCompany()
	spaces := e.spaces(c)
	company, deleted, other := spaces[0], spaces[1], e.spaces(c)[1]
	objects := func(prefix string) int {
		n := 0
		if err := e.objects.Keys(context.Background(), prefix, func(string, int64, time.Time) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, sp := range []fileSpaceOf{company, deleted, other} {
		e.upload("POST", sp, "", "a.pdf", []byte("a")).want(t, 201)
		e.upload("POST", sp, "?folder=x/y", "b.pdf", []byte("bb")).want(t, 201)
		if n := objects(sp.prefix); n != 2 {
			t.Fatalf("%s has %d objects, want 2", sp.prefix, n)
		}
	}
	e.do("DELETE", fmt.Sprintf("/v2/project/%d", deleted.owner), c.Admin, nil).want(t, 200)
	for _, tc := range []struct {
		sp   fileSpaceOf
		want int
	}{{deleted, 0}, {company, 2}, {other, 2}} {
		if n := objects(tc.sp.prefix); n != tc.want {
			t.Errorf("after deleting project %d, %s has %d objects, want %d", deleted.owner, tc.sp.prefix, n, tc.want)
		}
	}
	e.do("GET", other.base+"/file?path=x/y/b.pdf", other.as, nil).want(t, 200)
}
