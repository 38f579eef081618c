package http

import (
	"slices"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// GET /v2/analytics/functions (api.md 2.16, 4.8) answers the analysis
// functions of this release, from the catalog persisted at start, in
// aedifion's AnalysisFunction shape: reference data like the component
// catalog, so the same callers may read it.

// executionSchedule says when bdp runs an enabled instance of any
// function: each Monday 00:00 UTC over the week before (issue 10).
const executionSchedule = "weekly"

// analysisFunctionEntry is aedifion's AnalysisFunction with the
// components the function fits beside it.
type analysisFunctionEntry struct {
	AlphanumericID string `json:"alphanumeric_id" doc:"stable across servers and releases"`
	ID             int64  `json:"id" doc:"assigned by this server; analysisfunction_id of an instance"`
	Name           string `json:"name" doc:"nameEN, or nameDE with language=de"`
	NameDE         string `json:"nameDE"`
	NameEN         string `json:"nameEN"`
	// Components is bdp's addition: what the function can run on.
	Components        []string                    `json:"components" doc:"alphanumeric ids of the components the function fits"`
	Pins              []store.CatalogPin          `json:"pins" doc:"the component pins the function reads (with a component filter, that component's; else every fitting component's)"`
	Attributes        []store.AttributeDefinition `json:"attributes" doc:"the attribute definitions the function reads; one left empty takes the function's default, except schedule (schedule_analysis) and reference_curve (heating_curve_analysis), without which a run fails naming them"`
	KPIs              []string                    `json:"kpis" doc:"identifiers of the KPIs a result may report"`
	ExecutionSchedule string                      `json:"execution_schedule" doc:"weekly: every enabled instance runs each Monday 00:00 UTC over the week before; a run by hand takes any period"`
}

func (s *Server) listAnalysisFunctions(c *fiber.Ctx, _ *call) (any, error) {
	lang := c.Query("language")
	if lang != "" && lang != "en" && lang != "de" {
		return nil, fault.Invalidf("language %q is not supported: analysis function names are in en and de", fault.Clip(lang))
	}
	comp, filtered, err := s.queryComponent(c)
	if err != nil {
		return nil, err
	}
	fns := s.components.Functions()
	if filtered {
		fns = s.components.FunctionsFor(comp.AlphanumericID)
	}
	out := make([]analysisFunctionEntry, len(fns))
	for i, f := range fns {
		e := analysisFunctionEntry{AlphanumericID: f.AlphanumericID, ID: f.ID, Name: f.NameEN, NameDE: f.NameDE, NameEN: f.NameEN,
			Components: f.Components, Pins: []store.CatalogPin{}, Attributes: []store.AttributeDefinition{},
			KPIs: nonNilSlice(f.KPIs), ExecutionSchedule: executionSchedule}
		if lang == "de" {
			e.Name = f.NameDE
		}
		on := f.Components
		if filtered {
			on = []string{comp.AlphanumericID}
		}
		for _, id := range on {
			cc, _ := s.components.ComponentByAlphanumericID(id)
			e.Pins = append(e.Pins, pinsRead(f, cc)...)
			for _, a := range cc.Attributes {
				read := slices.Contains(f.Attributes, a.Key)
				listed := slices.ContainsFunc(e.Attributes, func(d store.AttributeDefinition) bool { return d.Key == a.Key })
				if read && !listed {
					e.Attributes = append(e.Attributes, a)
				}
			}
		}
		out[i] = e
	}
	return out, nil
}

// pinsRead is the pins of component c that f reads, in the catalog's
// order.
func pinsRead(f analytics.Function, c store.CatalogComponent) []store.CatalogPin {
	var out []store.CatalogPin
	for _, p := range c.Pins {
		if slices.ContainsFunc(f.Pins, func(fp analytics.FunctionPin) bool { return fp.PinIDs[c.AlphanumericID] == p.AlphanumericID }) {
			out = append(out, p)
		}
	}
	return out
}

// queryComponent is the component the query's component_id or
// component_alphanumeric_id names; false when neither is given. An
// unknown one answers 404, two naming different components 400.
func (s *Server) queryComponent(c *fiber.Ctx) (store.CatalogComponent, bool, error) {
	rawID, alnum := c.Query("component_id"), c.Query("component_alphanumeric_id")
	var byID, byAlnum store.CatalogComponent
	if rawID != "" {
		id, err := strconv.ParseInt(rawID, 10, 64)
		if err != nil || id <= 0 {
			return byID, false, fault.Invalidf("component_id must be a positive integer, got %q", fault.Clip(rawID))
		}
		var ok bool
		if byID, ok = s.components.Component(id); !ok {
			return byID, false, fault.NotFoundf("no component with id %d (GET /v2/components lists them)", id)
		}
	}
	if alnum != "" {
		var ok bool
		if byAlnum, ok = s.components.ComponentByAlphanumericID(alnum); !ok {
			return byAlnum, false, fault.NotFoundf("no component %q (GET /v2/components lists them)", fault.Clip(alnum))
		}
	}
	switch {
	case rawID != "" && alnum != "" && byID.ID != byAlnum.ID:
		return byID, false, fault.Invalidf("component_id %d and component_alphanumeric_id %q name different components", byID.ID, fault.Clip(alnum))
	case rawID != "":
		return byID, true, nil
	case alnum != "":
		return byAlnum, true, nil
	}
	return store.CatalogComponent{}, false, nil
}
