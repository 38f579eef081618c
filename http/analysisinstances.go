package http

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Analysis instances (api.md 2.16, 4.8; decisions.md 8): an analysis
// function configured on a component mapped into the project, at most one
// per function and component. Enabled ones run every week (the runner);
// any one runs by hand over a period of the caller's choice.

// maxRunPeriod is the longest period a manual run covers: a year, leap
// day included (issue 10), so one run reads a bounded amount of data.
const maxRunPeriod = 366 * 24 * time.Hour

// instanceRequest is the body of POST (aedifion's NewInstanceConfig).
type instanceRequest struct {
	AnalysisFunctionID   *int64  `json:"analysisfunction_id" required:"true" doc:"an id of GET /v2/analytics/functions that fits the component"`
	ComponentInProjectID *int64  `json:"componentinproject_id" required:"true" doc:"a component mapped into this project"`
	Description          *string `json:"description" maxLength:"2000" doc:"default empty"`
	Enabled              *bool   `json:"enabled" doc:"true: runs every Monday 00:00 UTC over the week before, besides manual runs; default false"`
	Name                 *string `json:"name" maxLength:"200" doc:"default empty"`
}

// instanceUpdate is the body of PUT: each field optional. Function and
// component are fixed (the instance's results belong to both): they may
// be given, but only with their current values.
type instanceUpdate struct {
	AnalysisFunctionID   *int64  `json:"analysisfunction_id" doc:"may be given, but only with the current value"`
	ComponentInProjectID *int64  `json:"componentinproject_id" doc:"may be given, but only with the current value"`
	Description          *string `json:"description" maxLength:"2000"`
	Enabled              *bool   `json:"enabled"`
	Name                 *string `json:"name" maxLength:"200"`
}

// instanceConfig is the config of an instance (api.md 2.16).
type instanceConfig struct {
	AnalysisFunctionID   int64  `json:"analysisfunction_id"`
	ComponentInProjectID int64  `json:"componentinproject_id"`
	Description          string `json:"description"`
	Enabled              bool   `json:"enabled"`
	Name                 string `json:"name"`
}

// analysisInstance is an instance as answered (aedifion's InstanceConfig).
type analysisInstance struct {
	ID        int64          `json:"id"`
	ProjectID int64          `json:"project_id"`
	Config    instanceConfig `json:"config"`
}

type instanceList struct {
	Items []analysisInstance `json:"items" doc:"every instance of the project, by id"`
}

// runAccepted is the resource of a manual run's answer (decisions.md 8).
type runAccepted struct {
	ResultID string `json:"result_id" doc:"the result's id (uuid); GET .../result/{result_id} shows it"`
	Status   string `json:"status" doc:"always running: the run is queued and computed off the request"`
}

// refusedInstanceBody is aedifion's field bdp has no use for: enabled is
// the weekly switch.
var refusedInstanceBody = []string{"auto_execution"}

func instanceAnswer(a store.AnalysisInstance) analysisInstance {
	return analysisInstance{ID: a.ID, ProjectID: a.ProjectID, Config: instanceConfig{AnalysisFunctionID: a.FunctionID,
		ComponentInProjectID: a.ComponentInProjectID, Description: a.Description, Enabled: a.Enabled, Name: a.Name}}
}

func (s *Server) createAnalysisInstance(c *fiber.Ctx, cl *call) (any, error) {
	var req instanceRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	fn, known := s.components.Function(*req.AnalysisFunctionID)
	if !known {
		return nil, fault.NotFoundf("no analysis function with id %d (GET /v2/analytics/functions lists them)", *req.AnalysisFunctionID)
	}
	componentID, err := s.store.ComponentInProjectExists(c.UserContext(), cl.ProjectID, *req.ComponentInProjectID)
	if err != nil {
		return nil, err
	}
	comp, _ := s.components.Component(componentID)
	if !fn.Fits(comp.AlphanumericID) {
		return nil, fault.Invalidf("analysis function %s (%d) does not fit component %s of component in project %d "+
			"(GET /v2/analytics/functions?component_alphanumeric_id=%s lists those that do)",
			fn.AlphanumericID, fn.ID, comp.AlphanumericID, *req.ComponentInProjectID, comp.AlphanumericID)
	}
	a, err := s.store.CreateAnalysisInstance(c.UserContext(), cl.ProjectID, store.NewAnalysisInstance{
		FunctionID: fn.ID, ComponentInProjectID: *req.ComponentInProjectID,
		Name: deref(req.Name), Description: deref(req.Description), Enabled: req.Enabled != nil && *req.Enabled})
	if err != nil {
		return nil, err
	}
	return ok("create", instanceAnswer(a)), nil
}

func (s *Server) getAnalysisInstance(c *fiber.Ctx, cl *call) (any, error) {
	a, err := s.pathInstance(c, cl)
	if err != nil {
		return nil, err
	}
	return instanceAnswer(a), nil
}

func (s *Server) listAnalysisInstances(c *fiber.Ctx, cl *call) (any, error) {
	list, err := s.store.AnalysisInstances(c.UserContext(), cl.ProjectID)
	if err != nil {
		return nil, err
	}
	items := make([]analysisInstance, len(list))
	for i, a := range list {
		items[i] = instanceAnswer(a)
	}
	return instanceList{Items: items}, nil
}

func (s *Server) updateAnalysisInstance(c *fiber.Ctx, cl *call) (any, error) {
	var req instanceUpdate
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	a, err := s.pathInstance(c, cl)
	if err != nil {
		return nil, err
	}
	if req.AnalysisFunctionID != nil && *req.AnalysisFunctionID != a.FunctionID {
		return nil, fault.Invalidf("analysisfunction_id cannot change (%d): create an instance of the other function instead", a.FunctionID)
	}
	if req.ComponentInProjectID != nil && *req.ComponentInProjectID != a.ComponentInProjectID {
		return nil, fault.Invalidf("componentinproject_id cannot change (%d): create an instance on the other component instead", a.ComponentInProjectID)
	}
	a, err = s.store.UpdateAnalysisInstance(c.UserContext(), cl.ProjectID, a.ID,
		store.AnalysisInstancePatch{Name: req.Name, Description: req.Description, Enabled: req.Enabled})
	if err != nil {
		return nil, err
	}
	return ok("update", instanceAnswer(a)), nil
}

func (s *Server) deleteAnalysisInstance(c *fiber.Ctx, cl *call) (any, error) {
	id, err := pathID(c, "instance_id")
	if err != nil {
		return nil, err
	}
	a, err := s.store.DeleteAnalysisInstance(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	return ok("delete", instanceAnswer(a)), nil
}

// runAnalysisInstance queues a run over [start, end) and answers at once:
// the row it inserts is the run's place in the queue, and its insertion
// wakes the runners.
func (s *Server) runAnalysisInstance(c *fiber.Ctx, cl *call) (any, error) {
	id, err := pathID(c, "instance_id")
	if err != nil {
		return nil, err
	}
	start, err := runTime(c, "start")
	if err != nil {
		return nil, err
	}
	end, err := runTime(c, "end")
	if err != nil {
		return nil, err
	}
	if !start.Before(end) {
		return nil, fault.Invalidf("start (%s) must be before end (%s)", start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	}
	if end.Sub(start) > maxRunPeriod {
		return nil, fault.Invalidf("the period from start to end is %s long; a run covers at most 366 days", end.Sub(start).Round(time.Second))
	}
	a, err := s.store.AnalysisInstance(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	if err := s.requireAnalysisReadable(c, cl, a.ComponentInProjectID); err != nil {
		return nil, err
	}
	r, err := s.store.CreateManualRun(c.UserContext(), cl.ProjectID, a.ID, start, end)
	if err != nil {
		return nil, err
	}
	return ok("create", runAccepted{ResultID: r.ID, Status: r.Status}), nil
}

// runTime reads a required RFC 3339 query parameter of a run.
func runTime(c *fiber.Ctx, name string) (time.Time, error) {
	raw := c.Query(name)
	if raw == "" {
		return time.Time{}, fault.Invalidf("%s is required (RFC 3339, e.g. 2024-03-04T00:00:00Z)", name)
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Time{}, fault.Invalidf("%s must be an RFC 3339 time such as 2024-03-04T00:00:00Z, got %q", name, fault.Clip(raw))
	}
	return t.UTC(), nil
}

func (s *Server) pathInstance(c *fiber.Ctx, cl *call) (store.AnalysisInstance, error) {
	id, err := pathID(c, "instance_id")
	if err != nil {
		return store.AnalysisInstance{}, err
	}
	return s.store.AnalysisInstance(c.UserContext(), cl.ProjectID, id)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Query parameters and texts of the analytics routes' OpenAPI entries.
var (
	projectQuery        = param{Name: "project_id", Type: "integer", Required: true, Doc: "the project"}
	resultLanguageQuery = param{Name: "result_language", Type: "string", Doc: "en (the default) or de: the language of texts and names"}
	languageQuery       = param{Name: "language", Type: "string", Doc: "en (the default) or de: the language of texts and names"}
	unitsSystemQuery    = param{Name: "units_system", Type: "string", Doc: "SI or imperial (GET /v2/labels/systems): the units KPI, plot " +
		"and summary values are shown in; default: the project's units_system setting"}
	currencySystemQuery = param{Name: "currency_system", Type: "string", Doc: "EUR, USD, GBP or CHF (GET /v2/labels/systems): the currency " +
		"of costs and prices, converted with the operator's exchange rates; default: the project's currency_system setting"}
	groupedQuery = []param{projectQuery, {Name: "page", Type: "integer", Doc: "default 1"},
		{Name: "per_page", Type: "integer", Doc: "default 100, at most 1000"}, languageQuery, unitsSystemQuery, currencySystemQuery}
)

// readable403 documents the refusal of analysisReadable.
const readable403 = "no grant of this endpoint or project, or no read access by TagAuth to every datapoint mapped on the instance's " +
	"component: its analyses are computed from them (the message names no datapoint)"

const instanceDoc = "An instance runs its function on one mapped component: by hand (POST .../run) over any period of at most " +
	"366 days, and, when enabled, every Monday 00:00 UTC over the week before. The function must fit the component " +
	"(GET /v2/analytics/functions?component_alphanumeric_id= lists those that do). Function and component cannot change " +
	"after creation: the instance's results belong to both; create another instance instead."

const resultDoc = "Statuses: running (queued or computing), Success, Failed (the reason in info). A running or failed result " +
	"answers empty kpi, plots and recommendation and leaves out signal_color and summary_kpi (aedifion's AnalysisResult: " +
	"signal_color is one of red, yellow, green; summary_kpi an object, never null). A Success over a period without data has signal_color " +
	"yellow, an interpretation that says so, and empty kpi and plots. Values are stored in the units the function computes them " +
	"in and converted on the way out: to units_system and currency_system when given, else to the project's settings; " +
	"a unit of no units system (h, %, ppm, count) stays; K is a temperature difference and becomes °F (× 9/5, no offset) " +
	"in imperial; a converted unit is named by its symbol. Every figure is rounded to two decimals (three significant digits below 1), " +
	"and the interpretation, the recommendations and the KPI names state figures (KPIs, and the tolerances the run judged against) " +
	"exactly as the kpi list shows them, in its units and currency and in result_language's number format. " +
	"summary_kpi compares the function's summary KPI over this period " +
	"(current) with the period of equal length before it: development.value is the change in percent of the value before, " +
	"computed in the function's units, arrow up from +1 %, down from −1 %, right in between; current.value is left out when " +
	"the period has no value, development when either period has none, and development.value (arrow by the sign of the change) " +
	"when the value before is 0 and this one is not. No value is ever NaN or infinite."

const latestDoc = "Components with a mapped datapoint the caller may not read (TagAuths) are left out: their analyses are " +
	"computed from it. The latest result of an instance is the one over the newest period (of two over the same period, the newer " +
	"run), whatever its status. A component's signal_color is the worst of its latest Success results (red, then yellow, then " +
	"green), grey when none succeeded. display_name is the mapped component's display_name, else its name in the language. " +
	"Units as in GET /v2/analytics/instance/{instance_id}/result/{result_id}."

// analysisReadable answers, for the project's mapped components, whether
// the caller may see what analyses compute from them: results are derived
// from the datapoints mapped on their pins, so a caller whose TagAuths do
// not let them read every one of those may neither run nor read the
// analyses of that component. A company role reads everything; a component
// with nothing mapped is readable.
func (s *Server) analysisReadable(c *fiber.Ctx, cl *call) (func(cipID int64) bool, error) {
	if cl.Perms.HasCompanyRole() {
		return func(int64) bool { return true }, nil
	}
	mapped, err := s.store.MappedDatapoints(c.UserContext(), cl.ProjectID)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, dps := range mapped {
		names = append(names, dps...)
	}
	access, err := s.datapointAccess(c.UserContext(), cl, names)
	if err != nil {
		return nil, err
	}
	return func(cipID int64) bool {
		for _, dp := range mapped[cipID] {
			if !access[dp].Read {
				return false
			}
		}
		return true
	}, nil
}

// requireAnalysisReadable is analysisReadable for one component: 403
// without naming the datapoints the caller may not read.
func (s *Server) requireAnalysisReadable(c *fiber.Ctx, cl *call, cipID int64) error {
	readable, err := s.analysisReadable(c, cl)
	if err != nil {
		return err
	}
	if !readable(cipID) {
		return fault.Forbiddenf("no read access to every datapoint mapped on component in project %d, which its analyses read", cipID)
	}
	return nil
}
