package http

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
)

// A parameter is either declared by its route (Query, Body) or refused:
// bdp never ignores one, so that a client never believes it was obeyed
// (decisions.md 10). Parameters aedifion's published API documents for an
// operation that bdp does not support are listed on the route
// (RefusedQuery, RefusedBody) and answered with their own message; any
// other query parameter the route does not declare is unknown and refused
// as well. Both checks run in wrap before the handler, so a refused
// request changes nothing.

// checkQueryNames answers 400 for the first query parameter r does not
// declare. checkParams has checked the names' text before.
func checkQueryNames(c *fiber.Ctx, r *route) error {
	for k := range c.Context().QueryArgs().All() {
		name := string(k)
		switch {
		case slices.ContainsFunc(r.Query, func(p param) bool { return p.Name == name }):
		case slices.Contains(r.RefusedQuery, name):
			return fault.Invalidf("parameter %s is not supported by bdp (aedifion's API has it; bdp refuses it rather than ignore it); nothing was done", name)
		default:
			return fault.Invalidf("unknown query parameter %q: %s %s takes %s; nothing was done", fault.Clip(name), r.Method, r.Path, queryNames(r))
		}
	}
	return nil
}

// queryNames lists the query parameters r takes, for error messages.
func queryNames(r *route) string {
	if len(r.Query) == 0 {
		return "no query parameters"
	}
	names := make([]string, len(r.Query))
	for i, p := range r.Query {
		names[i] = p.Name
	}
	return "only " + strings.Join(names, ", ")
}

// checkBodyFields answers 400 when the body, read whole, carries a field
// of r.RefusedBody at its top level: a JSON object's member or a
// form-encoded field. A body that is neither is left to the handler's
// decoding, which reports it.
func checkBodyFields(c *fiber.Ctx, r *route) error {
	if len(r.RefusedBody) == 0 {
		return nil
	}
	var present func(name string) bool
	if strings.HasPrefix(string(c.Request().Header.ContentType()), fiber.MIMEApplicationForm) {
		args := c.Request().PostArgs()
		present = func(name string) bool { return args.Has(name) }
	} else {
		var members map[string]json.RawMessage
		if json.Unmarshal(bytes.TrimSpace(c.Body()), &members) != nil {
			return nil
		}
		present = func(name string) bool { _, ok := members[name]; return ok }
	}
	for _, name := range r.RefusedBody {
		if present(name) {
			return fault.Invalidf("body field %s is not supported by bdp (aedifion's API has it; bdp refuses it rather than ignore it); nothing was changed", name)
		}
	}
	return nil
}

// refusedDoc says in an operation's description which of aedifion's
// parameters the route refuses; "" when none.
func refusedDoc(r *route) string {
	var parts []string
	for _, name := range r.RefusedQuery {
		parts = append(parts, "query "+name)
	}
	for _, name := range r.RefusedBody {
		parts = append(parts, "body "+name)
	}
	if parts == nil {
		return ""
	}
	return " Not supported, answered with 400 naming the parameter (aedifion's API documents them; bdp refuses them rather than ignore them): " +
		strings.Join(parts, "; ") + "."
}
