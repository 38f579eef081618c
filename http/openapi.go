package http

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openbdp/bdp/store"
)

// openAPIDocument renders the OpenAPI 3.1 document of every /v2 and
// operator route from the same declarations that build the router.
func (s *Server) openAPIDocument() ([]byte, error) {
	paths := map[string]map[string]any{}
	for _, group := range [][]*route{s.routes, operatorRoutes(s)} {
		for _, r := range group {
			if paths[r.Path] == nil {
				paths[r.Path] = map[string]any{}
			}
			paths[r.Path][strings.ToLower(r.Method)] = operation(r, s.bodyLimit(r))
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "bdp building data platform API",
			"version": s.cfg.Version,
			"description": "The /v2 API and the operator API. Endpoint ids for roles come from GET /v2/meta/endpoints. " +
				"Every operation answers 400 to a query parameter it does not declare (unknown query parameter), and to a parameter " +
				"of aedifion's API that bdp does not support (listed in the operation's description), rather than ignore it. " +
				"Likewise a JSON body field its request schema does not declare, at any depth, names are matched exactly " +
				"(400 unknown field \"path\", nothing changed); fields of aedifion's document for the operation are declared " +
				"(used, or described as ignored) or refused by name. An integer field takes a number written with a zero " +
				"fraction or an exponent (3600.0, 1e3) when its value is an integer exactly. " +
				"MQTT: the embedded broker listens on BDP_MQTT_ADDR (addresses.json key mqtt; over WebSocket on BDP_MQTT_WS_ADDR, on by default, " +
				"key mqtt_ws; GET /v2/meta/mqtt lists the listeners as URLs; over TLS on BDP_MQTT_TLS_ADDR, key mqtt_tls; over WebSocket over TLS on BDP_MQTT_WSS_ADDR, key mqtt_wss) for the credentials of POST /v2/project/{project_id}/mqttuser, topics project/{project_id}/# " +
				"(edge credentials: edge/{project_id}/#), packets up to 1 MiB; a refused CONNECT is told 0x86 (bad username or " +
				"password), 0x87 (expired) or 0x9F (too many failed logins, counted with HTTP's). " +
				"A kept session (clean session off, or an MQTT 5 session expiry) gets the messages that waited for it oldest " +
				"first, then newer ones; MQTT 5 messages carry only the subscription identifiers the client gave; the packet ids " +
				"of the client's SUBSCRIBE and UNSUBSCRIBE are apart from those of the messages to it (never refused 0x91).",
		},
		"paths": paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{
				"basic":    map[string]any{"type": "http", "scheme": "basic", "description": "email and password"},
				"bearer":   map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "from POST /v2/auth/token"},
				"operator": map[string]any{"type": "http", "scheme": "bearer", "description": "BDP_OPERATOR_TOKEN"},
			},
			"schemas": map[string]any{"Error": schemaOf(reflect.TypeOf(errorBody{}))},
		},
	}
	return json.Marshal(doc)
}

var pathParamRe = regexp.MustCompile(`\{([^}]+)\}`)

// operation documents one route; bodyLimit is its body limit in bytes.
func operation(r *route, bodyLimit int) map[string]any {
	op := map[string]any{
		"summary":     r.Summary,
		"operationId": operationID(r),
		"tags":        []string{r.Tag},
	}
	if r.ID != 0 {
		op["x-endpoint-id"] = r.ID
		op["description"] = "Catalog endpoint id " + itoa(int64(r.ID)) + "."
	}
	if r.Doc != "" {
		desc, _ := op["description"].(string)
		op["description"] = strings.TrimSpace(desc + " " + r.Doc)
	}
	if doc := refusedDoc(r); doc != "" {
		desc, _ := op["description"].(string)
		op["description"] = strings.TrimSpace(desc + doc)
	}
	var params []map[string]any
	for _, m := range pathParamRe.FindAllStringSubmatch(r.Path, -1) {
		schema := map[string]any{"type": "integer"}
		switch m[1] {
		case "dataPointID":
			schema = map[string]any{"type": "string"}
		case "result_id", "controls_app_id", "plot_view_id": // analysis results, controls apps and plot views are named by uuid
			schema = map[string]any{"type": "string", "format": "uuid"}
		}
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": schema})
	}
	for _, q := range r.Query {
		schema := map[string]any{"type": q.Type}
		if q.MaxLength > 0 {
			schema["maxLength"] = q.MaxLength
		}
		params = append(params, map[string]any{"name": q.Name, "in": "query", "required": q.Required,
			"description": q.Doc, "schema": schema})
	}
	if params != nil {
		op["parameters"] = params
	}
	if r.Body != nil {
		schema := schemaOf(reflect.TypeOf(r.Body))
		required := bodyRequired(r.Body)
		if _, hasRequired := schema["required"]; hasRequired && len(r.Query) > 0 {
			required = withoutQueryFields(schema, r.Query)
		}
		content := map[string]any{"application/json": map[string]any{"schema": schema}}
		if _, isForm := r.Body.(tokenForm); isForm {
			content = map[string]any{"application/x-www-form-urlencoded": map[string]any{"schema": schemaOf(reflect.TypeOf(r.Body))}}
		}
		if r.FormToo {
			content["application/x-www-form-urlencoded"] = map[string]any{"schema": schemaOf(reflect.TypeOf(r.Body))}
		}
		if f, isMultipart := r.Body.(multipartBody); isMultipart {
			content = map[string]any{"multipart/form-data": map[string]any{"schema": f.multipartSchema()}}
		}
		limit := "at most " + itoa(int64(bodyLimit)) + " bytes"
		if r.StreamBody {
			limit = "streamed; at most " + itoa(int64(bodyLimit)) + " bytes"
		}
		op["requestBody"] = map[string]any{"required": required, "content": content, "description": limit}
	}
	status := r.Status
	if status == 0 {
		status = 200
	}
	success := schemaOf(reflect.TypeOf(r.Resp))
	if r.RespAlt != nil {
		success = map[string]any{"oneOf": []any{success, r.RespAlt}}
	}
	responses := map[string]any{
		itoa(int64(status)): map[string]any{"description": "success",
			"content": map[string]any{"application/json": map[string]any{"schema": success}}},
	}
	for _, code := range errorStatuses(r) {
		when, ok := r.Errors[code]
		if !ok {
			when = errorDescription(code)
		}
		resp := map[string]any{"description": "error envelope: " + when,
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}}
		if code == 429 || code == 503 {
			resp["headers"] = map[string]any{"Retry-After": map[string]any{"description": "seconds to wait before trying again",
				"schema": map[string]any{"type": "integer"}}}
		}
		responses[itoa(int64(code))] = resp
	}
	switch r.Tag {
	case store.TagMeta:
	case "operator":
		op["security"] = []map[string]any{{"operator": []string{}}}
	default:
		op["security"] = []map[string]any{{"basic": []string{}}, {"bearer": []string{}}}
	}
	op["responses"] = responses
	return op
}

// errorDescription says when an error status is answered.
func errorDescription(code int) string {
	switch code {
	case 400:
		return "bad input: a parameter, the body or a value in it"
	case 401:
		return "no or wrong credentials (with WWW-Authenticate)"
	case 403:
		return "the credentials do not grant this endpoint, project or datapoint"
	case 404:
		return "no such resource"
	case 409:
		return "conflicts with the current state: a duplicate, or a status that does not allow it"
	case 408:
		return "the request line, headers or body did not arrive within the read timeout"
	case 413:
		return "the body is larger than the route's limit"
	case 414:
		return "the request URI (path and query) is longer than 8 KiB"
	case 422:
		return "the values cannot be converted as asked"
	case 431:
		return "the request line and headers together are larger than 16 KiB"
	case 429:
		return "too many failed password logins for this account or client address (by default more than 10 for one account, " +
			"or 100 from one address, within a minute): even the right password is refused until Retry-After (seconds) has passed; " +
			"bearer tokens are not affected"
	case 503:
		return "unavailable for now, as while the managed PostgreSQL restarts; retry after Retry-After (seconds)"
	}
	return "error"
}

// errorStatuses lists the error statuses a route can answer: those of
// every route of its kind plus the route's own Errors. Any request can be
// late (408), too long in its URI (414) or headers (431), or carry a body
// over its route's limit (413), whether the route takes a body or not.
func errorStatuses(r *route) []int {
	codes := []int{400, 404, 408, 413, 414, 431}
	if r.Tag != store.TagMeta {
		codes = append(codes, 401, 403)
	}
	_, isLogin := r.Body.(tokenForm)
	if isLogin {
		codes = append(codes, 401)
	}
	if (r.Tag != store.TagMeta && r.Tag != "operator") || isLogin {
		codes = append(codes, 429) // Basic, bearer and token logins are throttled
	}
	if r.Op != "" && r.Tag != store.TagMeta {
		codes = append(codes, 409)
	}
	if r.Path != "/v2/meta/endpoints" && r.Path != "/v2/openapi.json" { // these two answer from memory
		codes = append(codes, 503)
	}
	for code := range r.Errors {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

func operationID(r *route) string {
	id := strings.ToLower(r.Method)
	for _, part := range strings.Split(r.Path, "/") {
		part = strings.Trim(part, "{}")
		if part == "" || part == "v2" {
			continue
		}
		id += "_" + strings.ReplaceAll(part, ".", "_")
	}
	return id
}

// schemaOf derives a JSON schema from a Go type through its json tags; a
// `required:"true"` tag marks required fields, `nullable:"true"` one that
// may be null, `enum:"a,b"` the values one takes, and `doc` describes one.
func schemaOf(t reflect.Type) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[time.Time]() { // marshals as an RFC 3339 string
		return map[string]any{"type": "string", "format": "date-time"}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{} // raw JSON
		}
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem())}
	case reflect.Struct:
		return structSchema(t)
	}
	return map[string]any{}
}

func structSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	addFields(t, props, &required)
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func addFields(t reflect.Type, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && tag == "" {
			addFields(f.Type, props, required)
			continue
		}
		name := jsonName(f)
		fs := schemaOf(f.Type)
		if d := f.Tag.Get("doc"); d != "" {
			fs["description"] = d
		}
		if f.Tag.Get("nullable") == "true" {
			fs["type"] = []any{fs["type"], "null"}
		}
		if e := f.Tag.Get("enum"); e != "" {
			fs["enum"] = strings.Split(e, ",")
		}
		if n, err := strconv.Atoi(f.Tag.Get("maxLength")); err == nil {
			fs["maxLength"] = n // enforced by decode (checkLengths)
		}
		props[name] = fs
		if f.Tag.Get("required") == "true" {
			*required = append(*required, name)
		}
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// withoutQueryFields drops from a body schema's required list the fields
// its route takes as query parameters too (decodeWithQuery, aedifion's
// form): either place gives them, so neither is required as such. It
// reports whether a required field is left, which makes the body required.
func withoutQueryFields(schema map[string]any, query []param) bool {
	required, _ := schema["required"].([]string)
	kept := slices.DeleteFunc(slices.Clone(required), func(name string) bool {
		return slices.ContainsFunc(query, func(p param) bool { return p.Name == name })
	})
	if len(kept) == 0 {
		delete(schema, "required")
	} else {
		schema["required"] = kept
	}
	return len(kept) > 0
}

// bodyRequired says whether a route needs a body: a multipart upload, a
// JSON array or object value, or a struct with a required field does; the
// token form does not (Basic credentials can stand in for it), nor does a
// struct whose fields are all optional (an empty body counts as {}).
func bodyRequired(body any) bool {
	switch body.(type) {
	case tokenForm:
		return false
	case multipartBody:
		return true
	}
	t := reflect.TypeOf(body)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return true
	}
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("required") == "true" {
			return true
		}
	}
	return false
}
