package http

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// appStatus is an app's status (aedifion's ControlsAppStatus).
type appStatus struct {
	Code    int    `json:"code" doc:"the virtual datapoint status codes: 100 Created, 200 Starting, 201 Start failed, 202 Running, 300 Stopping, 301 Stop failed, 302 Stopped, 304 Health check failed, 500 Deleting"`
	Message string `json:"message"`
}

func appStatusOf(code int) appStatus { return appStatus{Code: code, Message: store.StatusText(code)} }

// controlsAppObject is a controls app as answered (api.md 2.13 with
// aedifion's ControlsApp fields).
type controlsAppObject struct {
	ID                   string             `json:"id" doc:"uuid"`
	Algorithm            string             `json:"algorithm" doc:"schedule or heating_curve"`
	Variation            string             `json:"variation"`
	ComponentInProjectID int64              `json:"component_in_project_id"`
	ComponentInProject   cipListItem        `json:"component_in_project"`
	ProjectID            int64              `json:"project_id"`
	Name                 string             `json:"name"`
	Description          string             `json:"description"`
	Config               controls.AppConfig `json:"config"`
	Status               appStatus          `json:"status"`
	UpdateAvailable      bool               `json:"update_available" doc:"always false: bdp's algorithms have one revision"`
	CreatedAt            string             `json:"created_at" doc:"RFC 3339, UTC"`
	Logs                 []appLogEntry      `json:"logs,omitempty" doc:"GET of one app only (aedifion's ControlsApp): its newest log entries (at most 20), newest first; all of them: GET .../logs"`
}

// appObjectLogs is how many log entries GET of one app carries.
const appObjectLogs = 20

// appRunResult is aedifion's ControlsAppUpdateResult.
type appRunResult struct {
	Affected      bool      `json:"affected" doc:"false when the app was in the asked state already"`
	ControlsAppID string    `json:"controls_app_id"`
	Status        appStatus `json:"status"`
}

// controlsAppBody documents the creation body (aedifion's
// PostControlsAppRequest); controls.ParseConfig reads it.
type controlsAppBody struct {
	SetpointWritingParams map[string]struct {
		Priority         int      `json:"priority" doc:"1 to 16, default 13; at run no more urgent than the project's setpoint_max_priority"`
		ResetValue       *float64 `json:"reset_value" doc:"written by the edge device when it loses the platform longer than alive_timeout; null (default) relinquishes the slot; the string \"null\" is taken too"`
		KeepOutOfService bool     `json:"keep_out_of_service"`
	} `json:"setpoint_writing_params" doc:"by the pin the app writes (schedule: the component's setpoint pin; heating_curve: outlet_temperature_setpoint)"`
}

// bulkRunBody is POST /v2/controls/apps/run.
type bulkRunBody struct {
	ControlsAppIDs []string `json:"controls_app_ids" doc:"the apps; none or empty: every app of the project"`
	Run            *bool    `json:"run" doc:"true runs, false stops; the query parameter run may say it instead"`
}

type appList struct {
	Items []controlsAppObject `json:"items"`
	Meta  pagination          `json:"meta"`
}

// appLogEntry is aedifion's EntityLog with bdp's details.
type appLogEntry struct {
	ID         string          `json:"id"`
	CreatedAt  string          `json:"created_at" doc:"RFC 3339 with microseconds, UTC"`
	LogLevel   string          `json:"log_level" doc:"info, warning or error"`
	LogMessage string          `json:"log_message"`
	Kind       string          `json:"kind" doc:"status_change, write (what the app wrote and what the device answered) or device"`
	StatusCode int             `json:"status_code" doc:"the app's status when logged"`
	Detail     json.RawMessage `json:"detail,omitempty" doc:"write: dataPointID, value, priority, state and reference when written, reason when refused"`
	Operation  *appWriteState  `json:"operation,omitempty" doc:"write: where its setpoint operation stands now (GET /v2/datapoint/setpoint/{reference} has its stages)"`
}

// appWriteState is what the device answered to an app's write.
type appWriteState struct {
	Reference string   `json:"reference"`
	State     string   `json:"state" doc:"initialized, requested, written or failed"`
	Reason    string   `json:"reason,omitempty" doc:"why it failed"`
	OldValue  *float64 `json:"old_value" doc:"the value the write overwrote at its priority, once the device answered"`
}

type appLogList struct {
	Items []appLogEntry `json:"items"`
	Meta  pagination    `json:"meta"`
}

// appIDParam reads the app's id from the path or, for DELETE by query,
// the query; it must be a uuid (400), else the store would be asked with
// text it cannot compare.
func appIDParam(c *fiber.Ctx) (string, error) {
	id := c.Params("controls_app_id")
	if id == "" {
		id = c.Query("controls_app_id")
	}
	if id == "" {
		return "", fault.Invalidf("controls_app_id is required")
	}
	if !isUUID(id) {
		return "", fault.Invalidf("controls_app_id must be a uuid, got %q", fault.Clip(id))
	}
	return strings.ToLower(id), nil
}

// appObjects answers apps with their mapped components, with one lookup.
func (s *Server) appObjects(ctx context.Context, projectID int64, apps []store.ControlsApp) ([]controlsAppObject, error) {
	cips, err := s.store.ComponentsInProject(ctx, projectID)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]store.ComponentInProject, len(cips))
	for _, c := range cips {
		byID[c.ID] = c
	}
	out := make([]controlsAppObject, 0, len(apps))
	for _, a := range apps {
		var cfg controls.AppConfig
		if err := json.Unmarshal(a.Config, &cfg); err != nil {
			return nil, fmt.Errorf("stored config of controls app %s: %w", a.ID, err)
		}
		cip := byID[a.ComponentInProjectID]
		out = append(out, controlsAppObject{ID: a.ID, Algorithm: a.Algorithm, Variation: a.Variation, ComponentInProjectID: a.ComponentInProjectID,
			ComponentInProject: cipListItem{ID: cip.ID, ComponentID: cip.ComponentID, NameEN: cip.NameEN, ProjectID: cip.ProjectID},
			ProjectID:          a.ProjectID, Name: a.Name, Description: a.Description, Config: cfg, Status: appStatusOf(a.StatusCode),
			CreatedAt: a.CreatedAt.UTC().Format(time.RFC3339)})
	}
	return out, nil
}

func (s *Server) appObject(ctx context.Context, a store.ControlsApp) (controlsAppObject, error) {
	objs, err := s.appObjects(ctx, a.ProjectID, []store.ControlsApp{a})
	if err != nil {
		return controlsAppObject{}, err
	}
	return objs[0], nil
}

func (s *Server) createControlsApp(c *fiber.Ctx, cl *call) (any, error) {
	ctx := c.UserContext()
	cipID, err := strconv.ParseInt(c.Query("componentinproject_id"), 10, 64)
	if err != nil || cipID <= 0 {
		return nil, fault.Invalidf("componentinproject_id must be a positive integer, got %q", fault.Clip(c.Query("componentinproject_id")))
	}
	if v := c.Query("variation"); v != "" && v != "default" {
		return nil, fault.Invalidf("variation %q is unknown: bdp's algorithms have only the default variation", fault.Clip(v))
	}
	alive := controls.DefaultAliveTimeout
	if raw := c.Query("alive_timeout"); raw != "" {
		if alive, err = strconv.Atoi(raw); err != nil {
			return nil, fault.Invalidf("alive_timeout must be an integer number of seconds, got %q", fault.Clip(raw))
		}
	}
	recovery := true
	if c.Query("auto_recovery") != "" {
		if recovery, err = queryBool(c, "auto_recovery"); err != nil {
			return nil, err
		}
	}
	componentID, err := s.store.ComponentInProjectExists(ctx, cl.ProjectID, cipID)
	if err != nil {
		return nil, err
	}
	comp, found := s.components.Component(componentID)
	if !found {
		return nil, fault.Invalidf("component %d of component in project %d is no longer in the catalog", componentID, cipID)
	}
	algorithm := c.Query("algorithm")
	cfg, err := controls.ParseConfig(algorithm, comp.AlphanumericID, c.Body(), alive, recovery)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	app := store.ControlsApp{ProjectID: cl.ProjectID, ComponentInProjectID: cipID, Algorithm: algorithm, Variation: c.Query("variation"),
		Name: *text(ptr(c.Query("name"))), Description: *text(ptr(c.Query("description"))), Config: raw}
	// The attributes set so far must be valid; missing ones are needed
	// only at run.
	if _, err := controls.Prepare(ctx, s.store, s.components, app, false); err != nil {
		return nil, err
	}
	app, err = s.store.CreateControlsApp(ctx, app, "created by "+cl.Principal.User.Email)
	if err != nil {
		return nil, err
	}
	obj, err := s.appObject(ctx, app)
	if err != nil {
		return nil, err
	}
	return ok("create", obj), nil
}

func (s *Server) getControlsApp(c *fiber.Ctx, cl *call) (any, error) {
	id, err := appIDParam(c)
	if err != nil {
		return nil, err
	}
	a, err := s.store.ControlsApp(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	obj, err := s.appObject(c.UserContext(), a)
	if err != nil {
		return nil, err
	}
	logs, _, err := s.store.ControlsAppLogs(c.UserContext(), id, store.AppLogQuery{MinLevel: store.LogInfo, Page: 1, PerPage: appObjectLogs})
	if err != nil {
		return nil, err
	}
	obj.Logs = appLogEntries(logs)
	return obj, nil
}

func (s *Server) deleteControlsApp(c *fiber.Ctx, cl *call) (any, error) {
	id, err := appIDParam(c)
	if err != nil {
		return nil, err
	}
	a, err := s.store.DeleteControlsApp(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	obj, err := s.appObject(c.UserContext(), a)
	if err != nil {
		return nil, err
	}
	return ok("delete", obj), nil
}

// appFilter is the list's filter: key=value pairs separated by ';', the
// same key ORed, different keys ANDed (aedifion's rule).
type appFilter map[string][]string

func parseAppFilter(raw string) (appFilter, error) {
	f := appFilter{}
	if strings.TrimSpace(raw) == "" {
		return f, nil
	}
	for _, part := range strings.Split(raw, ";") {
		k, v, found := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !found || v == "":
			return nil, fault.Invalidf("filter must be key=value pairs separated by ';', got %q", fault.Clip(raw))
		case k != "status_code" && k != "algorithm" && k != "component_in_project_id":
			return nil, fault.Invalidf("filter key %q is unknown: status_code, algorithm or component_in_project_id", fault.Clip(k))
		}
		f[k] = append(f[k], v)
	}
	return f, nil
}

func (f appFilter) keeps(a store.ControlsApp) bool {
	for k, values := range f {
		have := map[string]string{"status_code": strconv.Itoa(a.StatusCode), "algorithm": a.Algorithm,
			"component_in_project_id": strconv.FormatInt(a.ComponentInProjectID, 10)}[k]
		found := false
		for _, v := range values {
			found = found || v == have
		}
		if !found {
			return false
		}
	}
	return true
}

func (s *Server) listControlsApps(c *fiber.Ctx, cl *call) (any, error) {
	page, perPage, err := pageParams(c)
	if err != nil {
		return nil, err
	}
	filter, err := parseAppFilter(c.Query("filter"))
	if err != nil {
		return nil, err
	}
	all, err := s.store.ControlsApps(c.UserContext(), cl.ProjectID)
	if err != nil {
		return nil, err
	}
	search := strings.ToLower(c.Query("search"))
	kept := all[:0]
	for _, a := range all {
		if filter.keeps(a) && strings.Contains(strings.ToLower(a.Name), search) {
			kept = append(kept, a)
		}
	}
	objs, err := s.appObjects(c.UserContext(), cl.ProjectID, pageOf(kept, page, perPage))
	if err != nil {
		return nil, err
	}
	return appList{Items: objs, Meta: pageMeta(page, perPage, len(kept))}, nil
}

func (s *Server) controlsAppLogs(c *fiber.Ctx, cl *call) (any, error) {
	id, err := appIDParam(c)
	if err != nil {
		return nil, err
	}
	page, perPage, err := pageParams(c)
	if err != nil {
		return nil, err
	}
	q := store.AppLogQuery{MinLevel: store.LogInfo, Page: page, PerPage: perPage}
	switch lvl := c.Query("log_level"); lvl {
	case "", store.LogInfo, store.LogWarning, store.LogError:
		if lvl != "" {
			q.MinLevel = lvl
		}
	default:
		return nil, fault.Invalidf("log_level must be info, warning or error, got %q", fault.Clip(lvl))
	}
	switch o := c.Query("sort_order"); o {
	case "", "desc":
	case "asc":
		q.Ascending = true
	default:
		return nil, fault.Invalidf("sort_order must be asc or desc, got %q", fault.Clip(o))
	}
	for name, dst := range map[string]*time.Time{"start": &q.Start, "end": &q.End} {
		if raw := c.Query(name); raw != "" {
			if *dst, err = time.Parse(time.RFC3339Nano, raw); err != nil {
				return nil, fault.Invalidf("%s must be RFC 3339, got %q", name, fault.Clip(raw))
			}
		}
	}
	if _, err := s.store.ControlsApp(c.UserContext(), cl.ProjectID, id); err != nil {
		return nil, err
	}
	logs, total, err := s.store.ControlsAppLogs(c.UserContext(), id, q)
	if err != nil {
		return nil, err
	}
	return appLogList{Items: appLogEntries(logs), Meta: pageMeta(page, perPage, total)}, nil
}

// appLogEntries answers an app's log entries (never nil: aedifion's
// ControlsApp requires logs).
func appLogEntries(logs []store.ControlsAppLog) []appLogEntry {
	items := make([]appLogEntry, len(logs))
	for i, l := range logs {
		items[i] = appLogEntry{ID: strconv.FormatInt(l.ID, 10), CreatedAt: l.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
			LogLevel: l.Level, LogMessage: l.Message, Kind: l.Kind, StatusCode: l.StatusCode, Detail: l.Detail}
		if w := l.Write; w != nil {
			items[i].Operation = &appWriteState{Reference: w.Reference, State: w.State, Reason: w.Reason, OldValue: w.OldValue}
		}
	}
	return items
}

// controlsAppCreateParams are POST /v2/controls/app's query parameters.
var controlsAppCreateParams = []param{projectQuery,
	{Name: "componentinproject_id", Type: "integer", Required: true, Doc: "the mapped component the app controls"},
	{Name: "algorithm", Type: "string", Required: true, Doc: "schedule or heating_curve"},
	{Name: "variation", Type: "string", Doc: "default (the only one)"},
	{Name: "name", Type: "string", MaxLength: maxTextLen}, {Name: "description", Type: "string", MaxLength: maxTextLen},
	{Name: "alive_timeout", Type: "integer", Doc: "seconds the edge device may lose the platform before it writes the app's reset values; default 900"},
	{Name: "auto_recovery", Type: "boolean", Doc: "the device restarts the app when the platform is back; default true"},
}

// controlsAppDoc describes what an app does; the algorithms' own facts
// are GET /v2/controls/algorithms (controls.Specs).
const controlsAppDoc = "The algorithms (schedule, heating_curve), the components each fits, the pins it writes and reads and the " +
	"attributes it reads with their formats: GET /v2/controls/algorithms. " +
	"Writes go through the setpoint write path (the safeguards of POST /v2/datapoint/setpoint) at priority 13, reset_value null, " +
	"keep_out_of_service false unless setpoint_writing_params says otherwise; the reset values and alive_timeout go to the edge device " +
	"with the app. Attributes missing at creation are needed at run; those set must be valid. A running app whose first write since " +
	"its start, or 3 writes in a row, the safeguards refuse stops with status 304 Health check failed and the reason in its log."
