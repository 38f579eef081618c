package http

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Analysis results (api.md 2.17, 3.4, 4.8): a result is written running
// when a run is queued (by hand or by the weekly schedule) and the runner
// moves it to Success or Failed. Shapes api.md does not show follow
// aedifion's schemas (decisions.md 10): AnalysisResultSummary,
// AnalysisResult, AnalyticsResultsForComponents and
// AnalyticsResultsForComponent.

// resultSummary is an item of an instance's results (AnalysisResultSummary).
type resultSummary struct {
	ResultID        string      `json:"result_id"`
	InputParameters resultInput `json:"input_parameters"`
	Status          string      `json:"status" doc:"running (queued or computing), Success or Failed"`
	SignalColor     string      `json:"signal_color,omitempty" enum:"red,yellow,green" doc:"red, yellow or green for a Success; left out otherwise"`
	Interpretation  string      `json:"interpretation" doc:"in result_language; says what a running or failed result is doing"`
	Weekly          bool        `json:"weekly" doc:"made by the weekly schedule rather than by hand"`
}

type resultInput struct {
	Start string `json:"start" doc:"RFC 3339, UTC"`
	End   string `json:"end" doc:"RFC 3339, UTC"`
}

// resultDetail is a result (api.md 2.17, aedifion's AnalysisResult).
type resultDetail struct {
	ResultID         string       `json:"result_id"`
	AlphanumericID   string       `json:"alphanumeric_id" doc:"the analysis function's"`
	AnalyticsVersion string       `json:"analytics_version" doc:"the version of the bdp binary that computed it; empty while running"`
	DisplayName      string       `json:"display_name" doc:"the mapped component's display_name, else its name in result_language"`
	FunctionName     string       `json:"function_name" doc:"in result_language"`
	InstanceID       int64        `json:"instance_id"`
	ProjectID        int64        `json:"project_id"`
	Start            string       `json:"start" doc:"RFC 3339, UTC"`
	End              string       `json:"end" doc:"RFC 3339, UTC"`
	Weekly           bool         `json:"weekly" doc:"made by the weekly schedule rather than by hand"`
	Status           string       `json:"status" doc:"running (queued or computing), Success or Failed"`
	Interpretation   string       `json:"interpretation" doc:"in result_language"`
	Recommendation   []string     `json:"recommendation" doc:"in result_language; empty unless Success"`
	SignalColor      string       `json:"signal_color,omitempty" enum:"red,yellow,green" doc:"red, yellow or green for a Success (yellow for a period without data); left out otherwise, as aedifion's AnalysisResult allows (its enum has no empty value)"`
	KPI              []resultKPI  `json:"kpi" doc:"empty unless Success with data"`
	Plots            []resultPlot `json:"plots" doc:"empty unless Success with data"`
	SummaryKPI       *summaryKPI  `json:"summary_kpi,omitempty" doc:"left out unless Success (aedifion's SummaryKPIResult is an object, never null)"`
	Info             []string     `json:"info" doc:"the reason of a Failed result, or a note of the runner; else empty"`
}

// resultOfComponent is a component's latest result of one instance
// (aedifion's AnalyticsResultsForComponentResultIds).
type resultOfComponent struct {
	ResultID           string      `json:"result_id"`
	InstanceID         int64       `json:"instance_id"`
	AnalysisFunctionID int64       `json:"analysis_function_id"`
	AlphanumericID     string      `json:"alphanumeric_id" doc:"the analysis function's"`
	FunctionName       string      `json:"function_name" doc:"in language"`
	DisplayName        string      `json:"display_name" doc:"the component's"`
	AnalyticsVersion   string      `json:"analytics_version"`
	Start              string      `json:"start"`
	End                string      `json:"end"`
	Status             string      `json:"status" doc:"running, Success or Failed"`
	SignalColor        string      `json:"signal_color,omitempty" enum:"red,yellow,green" doc:"red, yellow or green for a Success; left out otherwise"`
	Interpretation     string      `json:"interpretation" doc:"in language"`
	SummaryKPI         *summaryKPI `json:"summary_kpi,omitempty" doc:"left out unless Success"`
}

// componentWithResults is an item of GET /v2/analytics/componentsInProject.
type componentWithResults struct {
	ComponentInProjectID int64               `json:"componentinproject_id"`
	DisplayName          string              `json:"display_name"`
	SignalColor          string              `json:"signal_color" doc:"the worst (red, then yellow, then green) of result_ids' Success results; grey when none succeeded"`
	ResultIDs            []resultOfComponent `json:"result_ids" doc:"the latest result of each instance of the component that has one"`
}

type componentsWithResults struct {
	Items []componentWithResults `json:"items" doc:"mapped components with at least one instance with a result, by id"`
	Meta  pagination             `json:"meta"`
}

// componentResults is GET /v2/analytics/componentInProject/{id}/results
// (aedifion's AnalyticsResultsForComponent, with the instances beside).
type componentResults struct {
	ComponentInProject cipDetail           `json:"component_in_project"`
	SignalColor        string              `json:"signal_color" doc:"as in GET /v2/analytics/componentsInProject"`
	ResultIDs          []resultOfComponent `json:"result_ids" doc:"the latest result of each instance that has one"`
	Instances          []instanceResultIDs `json:"instances" doc:"every instance of the component with the ids of all its results, newest period first"`
}

type instanceResultIDs struct {
	Instance  analysisInstance `json:"instance"`
	ResultIDs []string         `json:"result_ids"`
}

// componentInstances is an item of GET /v2/analytics/results: every
// instance of a component with its latest result, if any.
type componentInstances struct {
	ComponentInProjectID int64            `json:"componentinproject_id"`
	DisplayName          string           `json:"display_name"`
	SignalColor          string           `json:"signal_color" doc:"as in GET /v2/analytics/componentsInProject"`
	Instances            []instanceLatest `json:"instances"`
}

type instanceLatest struct {
	Instance     analysisInstance   `json:"instance"`
	LatestResult *resultOfComponent `json:"latest_result" nullable:"true" doc:"null when the instance has no result yet"`
}

type allResults struct {
	Items []componentInstances `json:"items" doc:"mapped components with at least one instance, by id"`
	Meta  pagination           `json:"meta"`
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (s *Server) listInstanceResults(c *fiber.Ctx, cl *call) (any, error) {
	view, err := s.resultViewOf(c, cl, "result_language")
	if err != nil {
		return nil, err
	}
	a, err := s.pathInstance(c, cl)
	if err != nil {
		return nil, err
	}
	if err := s.requireAnalysisReadable(c, cl, a.ComponentInProjectID); err != nil {
		return nil, err
	}
	results, err := s.store.AnalysisResultsOf(c.UserContext(), cl.ProjectID, a.ID)
	if err != nil {
		return nil, err
	}
	out := make([]resultSummary, len(results))
	for i, r := range results {
		o, err := outcomeOf(r)
		if err != nil {
			return nil, err
		}
		out[i] = resultSummary{ResultID: r.ID, InputParameters: resultInput{Start: rfc3339(r.Start), End: rfc3339(r.End)},
			Status: r.Status, SignalColor: o.SignalColor, Interpretation: view.interpretationOf(r, o, view.figuresOf(o)), Weekly: r.Weekly}
	}
	return out, nil
}

func (s *Server) getInstanceResult(c *fiber.Ctx, cl *call) (any, error) {
	view, err := s.resultViewOf(c, cl, "result_language")
	if err != nil {
		return nil, err
	}
	instance, err := pathID(c, "instance_id")
	if err != nil {
		return nil, err
	}
	resultID := c.Params("result_id")
	if !isUUID(resultID) {
		return nil, fault.Invalidf("result_id must be a uuid such as 0b6f1c3e-9a4d-4c55-8d0e-2f3b1a7c9e21, got %q", fault.Clip(resultID))
	}
	r, err := s.store.AnalysisResult(c.UserContext(), cl.ProjectID, instance, resultID)
	if err != nil {
		return nil, err
	}
	if err := s.requireAnalysisReadable(c, cl, r.ComponentInProjectID); err != nil {
		return nil, err
	}
	cip, err := s.store.ComponentInProject(c.UserContext(), cl.ProjectID, r.ComponentInProjectID)
	if err != nil {
		return nil, err
	}
	o, err := outcomeOf(r)
	if err != nil {
		return nil, err
	}
	figs := view.figuresOf(o)
	d := resultDetail{ResultID: r.ID, AlphanumericID: r.FunctionAlphanumericID, AnalyticsVersion: r.AnalyticsVersion,
		DisplayName: s.displayName(cip, view.lang), FunctionName: view.functionName(r), InstanceID: r.InstanceID,
		ProjectID: r.ProjectID, Start: rfc3339(r.Start), End: rfc3339(r.End), Weekly: r.Weekly, Status: r.Status,
		Interpretation: view.interpretationOf(r, o, figs), Recommendation: []string{}, Info: []string{}}
	if r.Info != "" {
		d.Info = append(d.Info, r.Info)
	}
	if r.Status != store.AnalysisSuccess {
		d.KPI, d.Plots = []resultKPI{}, []resultPlot{}
		return d, nil
	}
	d.SignalColor = o.SignalColor
	for _, t := range o.Recommendation {
		d.Recommendation = append(d.Recommendation, view.fill(t, figs))
	}
	if d.KPI, err = view.kpisOf(o, figs); err != nil {
		return nil, err
	}
	if d.Plots, err = view.plotsOf(o.Plots); err != nil {
		return nil, err
	}
	if d.SummaryKPI, err = view.summaryOf(o, figs, r.Start, r.End); err != nil {
		return nil, err
	}
	return d, nil
}

// isUUID says whether s is a uuid in its 36-character text form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, ch := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if ch != '-' {
				return false
			}
		case '0' <= ch && ch <= '9', 'a' <= ch && ch <= 'f', 'A' <= ch && ch <= 'F':
		default:
			return false
		}
	}
	return true
}

// componentGroups gathers what the grouped routes show: the project's
// mapped components whose analyses the caller may read (analysisReadable),
// in id order, and the latest result of each instance (of one component
// when componentInProjectID is above 0) by component.
type componentGroups struct {
	cips   []store.ComponentInProject
	latest map[int64][]store.AnalysisResult
}

func (s *Server) componentGroupsOf(c *fiber.Ctx, cl *call, componentInProjectID int64) (componentGroups, error) {
	ctx := c.UserContext()
	all, err := s.store.ComponentsInProject(ctx, cl.ProjectID)
	if err != nil {
		return componentGroups{}, err
	}
	readable, err := s.analysisReadable(c, cl)
	if err != nil {
		return componentGroups{}, err
	}
	var cips []store.ComponentInProject
	for _, cip := range all {
		if readable(cip.ID) {
			cips = append(cips, cip)
		}
	}
	latest, err := s.store.LatestAnalysisResults(ctx, cl.ProjectID, componentInProjectID)
	if err != nil {
		return componentGroups{}, err
	}
	g := componentGroups{cips: cips, latest: map[int64][]store.AnalysisResult{}}
	for _, r := range latest {
		g.latest[r.ComponentInProjectID] = append(g.latest[r.ComponentInProjectID], r)
	}
	return g, nil
}

// resultsOfComponent shows a component's latest results with its worst
// signal color.
func (s *Server) resultsOfComponent(view resultView, cip store.ComponentInProject, latest []store.AnalysisResult) ([]resultOfComponent, string, error) {
	out := make([]resultOfComponent, 0, len(latest))
	var colors []string
	for _, r := range latest {
		item, err := s.resultOfComponent(view, cip, r)
		if err != nil {
			return nil, "", err
		}
		if r.Status == store.AnalysisSuccess {
			colors = append(colors, item.SignalColor)
		}
		out = append(out, item)
	}
	return out, worstColor(colors), nil
}

func (s *Server) resultOfComponent(view resultView, cip store.ComponentInProject, r store.AnalysisResult) (resultOfComponent, error) {
	o, err := outcomeOf(r)
	if err != nil {
		return resultOfComponent{}, err
	}
	figs := view.figuresOf(o)
	item := resultOfComponent{ResultID: r.ID, InstanceID: r.InstanceID, AnalysisFunctionID: r.FunctionID, AlphanumericID: r.FunctionAlphanumericID,
		FunctionName: view.functionName(r), DisplayName: s.displayName(cip, view.lang), AnalyticsVersion: r.AnalyticsVersion,
		Start: rfc3339(r.Start), End: rfc3339(r.End), Status: r.Status, Interpretation: view.interpretationOf(r, o, figs)}
	if r.Status == store.AnalysisSuccess {
		item.SignalColor = o.SignalColor
		if item.SummaryKPI, err = view.summaryOf(o, figs, r.Start, r.End); err != nil {
			return resultOfComponent{}, err
		}
	}
	return item, nil
}

// colorRank orders signal colours from good to bad; others rank 0.
func colorRank(c string) int {
	switch c {
	case "green":
		return 1
	case "yellow":
		return 2
	case "red":
		return 3
	}
	return 0
}

// worstColor is red over yellow over green; grey when there is none.
func worstColor(colors []string) string {
	worst, rank := "grey", 0
	for _, c := range colors {
		if r := colorRank(c); r > rank {
			worst, rank = c, r
		}
	}
	return worst
}

func (s *Server) analyticsComponentsInProject(c *fiber.Ctx, cl *call) (any, error) {
	page, perPage, err := pageParams(c)
	if err != nil {
		return nil, err
	}
	view, err := s.resultViewOf(c, cl, "language")
	if err != nil {
		return nil, err
	}
	g, err := s.componentGroupsOf(c, cl, 0)
	if err != nil {
		return nil, err
	}
	var all []store.ComponentInProject
	for _, cip := range g.cips {
		if len(g.latest[cip.ID]) > 0 {
			all = append(all, cip)
		}
	}
	shown, meta := listPage(all, page, perPage)
	items := make([]componentWithResults, 0, len(shown))
	for _, cip := range shown {
		results, color, err := s.resultsOfComponent(view, cip, g.latest[cip.ID])
		if err != nil {
			return nil, err
		}
		items = append(items, componentWithResults{ComponentInProjectID: cip.ID, DisplayName: s.displayName(cip, view.lang),
			SignalColor: color, ResultIDs: results})
	}
	return componentsWithResults{Items: items, Meta: meta}, nil
}

func (s *Server) analyticsComponentResults(c *fiber.Ctx, cl *call) (any, error) {
	view, err := s.resultViewOf(c, cl, "language")
	if err != nil {
		return nil, err
	}
	cip, err := s.pathCIP(c, cl)
	if err != nil {
		return nil, err
	}
	if err := s.requireAnalysisReadable(c, cl, cip.ID); err != nil {
		return nil, err
	}
	detail, err := s.cipAnswer(c, cl, "", cip)
	if err != nil {
		return nil, err
	}
	g, err := s.componentGroupsOf(c, cl, cip.ID)
	if err != nil {
		return nil, err
	}
	results, color, err := s.resultsOfComponent(view, cip, g.latest[cip.ID])
	if err != nil {
		return nil, err
	}
	instances, err := s.store.AnalysisInstances(c.UserContext(), cl.ProjectID)
	if err != nil {
		return nil, err
	}
	ids, err := s.store.AnalysisResultIDs(c.UserContext(), cl.ProjectID, cip.ID)
	if err != nil {
		return nil, err
	}
	out := componentResults{ComponentInProject: detail.(cipDetail), SignalColor: color, ResultIDs: results, Instances: []instanceResultIDs{}}
	for _, a := range instances {
		if a.ComponentInProjectID == cip.ID {
			out.Instances = append(out.Instances, instanceResultIDs{Instance: instanceAnswer(a), ResultIDs: nonNilSlice(ids[a.ID])})
		}
	}
	return out, nil
}

func (s *Server) analyticsResults(c *fiber.Ctx, cl *call) (any, error) {
	page, perPage, err := pageParams(c)
	if err != nil {
		return nil, err
	}
	view, err := s.resultViewOf(c, cl, "language")
	if err != nil {
		return nil, err
	}
	g, err := s.componentGroupsOf(c, cl, 0)
	if err != nil {
		return nil, err
	}
	instances, err := s.store.AnalysisInstances(c.UserContext(), cl.ProjectID)
	if err != nil {
		return nil, err
	}
	byComponent := map[int64][]store.AnalysisInstance{}
	for _, a := range instances {
		byComponent[a.ComponentInProjectID] = append(byComponent[a.ComponentInProjectID], a)
	}
	var all []store.ComponentInProject
	for _, cip := range g.cips {
		if len(byComponent[cip.ID]) > 0 {
			all = append(all, cip)
		}
	}
	shown, meta := listPage(all, page, perPage)
	items := make([]componentInstances, 0, len(shown))
	for _, cip := range shown {
		results, color, err := s.resultsOfComponent(view, cip, g.latest[cip.ID])
		if err != nil {
			return nil, err
		}
		latest := map[int64]*resultOfComponent{}
		for i := range results {
			latest[results[i].InstanceID] = &results[i]
		}
		item := componentInstances{ComponentInProjectID: cip.ID, DisplayName: s.displayName(cip, view.lang), SignalColor: color}
		for _, a := range byComponent[cip.ID] {
			item.Instances = append(item.Instances, instanceLatest{Instance: instanceAnswer(a), LatestResult: latest[a.ID]})
		}
		items = append(items, item)
	}
	return allResults{Items: items, Meta: meta}, nil
}

// listPage is one page of all with its meta (decisions.md 4).
func listPage[T any](all []T, page, perPage int) ([]T, pagination) {
	return pageOf(all, page, perPage), pageMeta(page, perPage, len(all))
}

// displayName is what a component is called in a result: its
// display_name, else its name in lang, else its catalog component's.
func (s *Server) displayName(cip store.ComponentInProject, lang string) string {
	if cip.DisplayName != "" {
		return cip.DisplayName
	}
	if lang == "de" && cip.NameDE != "" {
		return cip.NameDE
	}
	if cip.NameEN != "" {
		return cip.NameEN
	}
	comp, _ := s.components.Component(cip.ComponentID)
	if lang == "de" {
		return comp.NameDE
	}
	return comp.NameEN
}

func (v resultView) functionName(r store.AnalysisResult) string {
	return v.text(analytics.Text{EN: r.FunctionNameEN, DE: r.FunctionNameDE})
}
