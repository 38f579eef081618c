package http

import (
	"reflect"
	"slices"
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// Every list route answers page and per_page. Most list routes page in
// their handler (they declare page in Query: VDPs, files, controls apps,
// alerts, analytics results); the others build their whole list, and
// wrap pages it (pageLists marks them): a bare array keeps its shape,
// sliced, with the list's length in X-Total-Count; an {items, meta}
// answer gets its items sliced and, when it has one, its meta counted
// anew. Without page and per_page such a route answers the whole list, as
// before, so that no client that read it whole gets less.

// totalCountHeader carries the length of a bare array list when a page
// of it was asked for.
const totalCountHeader = "X-Total-Count"

// pageLists marks the GET routes whose answer is a list and that do not
// page it themselves, and declares page and per_page on them.
func pageLists(routes []*route) {
	for _, r := range routes {
		if r.Method != fiber.MethodGet || !isList(reflect.TypeOf(r.Resp)) ||
			slices.ContainsFunc(r.Query, func(p param) bool { return p.Name == "page" }) {
			continue
		}
		r.PagedByWrap = true
		r.Query = append(slices.Clip(r.Query),
			param{Name: "page", Type: "integer", Doc: "the page of the list, from 1; without page and per_page the whole list " +
				"(a bare array's length is then in no header; with them in X-Total-Count)"},
			param{Name: "per_page", Type: "integer", Doc: "items per page, 1 to 1000; default 100 when page is given"})
	}
}

// isList tells a list answer: an array, or an object with an items array.
func isList(t reflect.Type) bool {
	if t == nil {
		return false
	}
	if t.Kind() == reflect.Slice {
		return true
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	f, ok := t.FieldByName("Items")
	return ok && f.Type.Kind() == reflect.Slice
}

// pageRequest is the page a request asks for; asked is false when it names
// neither page nor per_page.
type pageRequest struct {
	asked         bool
	page, perPage int
}

func pageRequestOf(c *fiber.Ctx) (pageRequest, error) {
	page, perPage, err := pageParams(c)
	return pageRequest{asked: c.Query("page") != "" || c.Query("per_page") != "", page: page, perPage: perPage}, err
}

// apply cuts the page out of a handler's whole list.
func (p pageRequest) apply(c *fiber.Ctx, res any) any {
	switch res.(type) {
	case nil, rawJSON, streamedJSON:
		return res // encoded already: a list route answers its values
	}
	if !p.asked {
		return res
	}
	v := reflect.ValueOf(res)
	switch v.Kind() {
	case reflect.Slice:
		c.Set(totalCountHeader, strconv.Itoa(v.Len()))
		return p.cut(v).Interface()
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		items := out.FieldByName("Items")
		total := items.Len()
		items.Set(p.cut(items))
		if meta := out.FieldByName("Meta"); meta.IsValid() && meta.Type() == reflect.TypeFor[pagination]() {
			meta.Set(reflect.ValueOf(pageMeta(p.page, p.perPage, total)))
		}
		return out.Interface()
	}
	return res
}

// cut is pageOf for a slice known by reflection; never nil, so that an
// empty page is [] and not null.
func (p pageRequest) cut(list reflect.Value) reflect.Value {
	from, to := pageBounds(list.Len(), p.page, p.perPage)
	out := reflect.MakeSlice(list.Type(), to-from, to-from)
	reflect.Copy(out, list.Slice(from, to))
	return out
}

// pageBounds is where page (of perPage items) lies in a list of n items.
func pageBounds(n, page, perPage int) (from, to int) {
	from = n
	if page <= n/perPage+1 { // (page-1)*perPage cannot overflow
		from = min((page-1)*perPage, n)
	}
	return from, min(from+perPage, n)
}
