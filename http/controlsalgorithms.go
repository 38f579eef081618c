package http

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/controls"
)

// checkControlsAttribute refuses an attribute value a controls app's run
// would refuse (controls.CheckAttributes), judged with the component's
// other attributes as they are: the mistake is named when it is made, not
// at the next run.
func (s *Server) checkControlsAttribute(ctx context.Context, projectID, cipID int64, key, value string) error {
	cip, err := s.store.ComponentInProject(ctx, projectID, cipID)
	if err != nil {
		return err
	}
	comp, _ := s.components.Component(cip.ComponentID)
	attrs := map[string]string{key: value}
	for _, def := range comp.Attributes {
		if v, ok := cip.Attributes[def.ID]; ok && def.Key != key {
			attrs[def.Key] = v
		}
	}
	return controls.CheckAttributes(attrs)
}

// listControlsAlgorithms documents the algorithms: the components each
// fits, the pins it writes and reads, the attributes it reads with their
// formats.
func (s *Server) listControlsAlgorithms(*fiber.Ctx, *call) (any, error) {
	return controls.Specs(), nil
}

// algorithmVariation is one variation of an algorithm on a component in
// aedifion's GET /v2/controls/algorithms_by_component.
type algorithmVariation struct {
	Attributes []variationAttribute `json:"attributes"`
	Pins       struct {
		Input  []variationPin `json:"input"`
		Output []variationPin `json:"output"`
	} `json:"pins"`
}

type variationAttribute struct {
	AttributeAlphanumericID string `json:"attribute_alphanumeric_id"`
	DefaultValue            any    `json:"default_value" doc:"null: no default (required), or unset means what GET /v2/controls/algorithms says"`
	Required                bool   `json:"required"`
}

type variationPin struct {
	PinAlphanumericID string `json:"pin_alphanumeric_id"`
	Required          bool   `json:"required"`
}

// algorithmsByComponent is aedifion's shape of the same facts: component
// alphanumeric id -> algorithm -> variation -> its attributes and pins,
// filtered by the repeated query parameters component_alphanumeric_ids
// and algorithms.
func (s *Server) algorithmsByComponent(c *fiber.Ctx, _ *call) (any, error) {
	wanted := func(name string) map[string]bool {
		var set map[string]bool
		for _, v := range c.Context().QueryArgs().PeekMulti(name) {
			if set == nil {
				set = map[string]bool{}
			}
			set[string(v)] = true
		}
		return set
	}
	comps, algs := wanted("component_alphanumeric_ids"), wanted("algorithms")
	out := map[string]map[string]map[string]algorithmVariation{}
	for _, spec := range controls.Specs() {
		if algs != nil && !algs[spec.Key] {
			continue
		}
		var v algorithmVariation
		for _, a := range spec.Attributes {
			v.Attributes = append(v.Attributes, variationAttribute{AttributeAlphanumericID: a.Key, Required: a.Required})
		}
		for _, cp := range spec.Components {
			if comps != nil && !comps[cp.ComponentAlphanumericID] {
				continue
			}
			cv := v
			cv.Pins.Input, cv.Pins.Output = requiredPins(cp.Input), requiredPins(cp.Output)
			if out[cp.ComponentAlphanumericID] == nil {
				out[cp.ComponentAlphanumericID] = map[string]map[string]algorithmVariation{}
			}
			out[cp.ComponentAlphanumericID][spec.Key] = map[string]algorithmVariation{"default": cv}
		}
	}
	return out, nil
}

func requiredPins(ids []string) []variationPin {
	out := make([]variationPin, len(ids))
	for i, id := range ids {
		out[i] = variationPin{PinAlphanumericID: id, Required: true}
	}
	return out
}
