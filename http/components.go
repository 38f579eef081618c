package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// GET /v2/components, /v2/component/{component_id}/pins and
// /v2/component/{component_id}/attributeDefinitions (api.md 2.14, 4.8)
// answer the analytics catalog, which ships with the binary and was
// persisted at start (analytics.LoadCatalog): reference data every role
// may be granted, like the unit labels.

// componentEntry is a component in GET /v2/components.
type componentEntry struct {
	AlphanumericID string `json:"alphanumeric_id" doc:"stable across servers and releases"`
	ID             int64  `json:"id" doc:"assigned by this server; use it in the component routes"`
	NameDE         string `json:"nameDE"`
	NameEN         string `json:"nameEN"`
}

func (s *Server) listComponents(*fiber.Ctx, *call) (any, error) {
	comps := s.components.Components()
	out := make([]componentEntry, len(comps))
	for i, c := range comps {
		out[i] = componentEntry{AlphanumericID: c.AlphanumericID, ID: c.ID, NameDE: c.NameDE, NameEN: c.NameEN}
	}
	return out, nil
}

func (s *Server) componentPins(c *fiber.Ctx, _ *call) (any, error) {
	comp, err := s.pathComponent(c)
	if err != nil {
		return nil, err
	}
	return nonNilSlice(comp.Pins), nil
}

func (s *Server) componentAttributeDefinitions(c *fiber.Ctx, _ *call) (any, error) {
	comp, err := s.pathComponent(c)
	if err != nil {
		return nil, err
	}
	return nonNilSlice(comp.Attributes), nil
}

// pathComponent is the catalog component named by the path's
// component_id: 404 when the catalog has none.
func (s *Server) pathComponent(c *fiber.Ctx) (store.CatalogComponent, error) {
	id, err := pathID(c, "component_id")
	if err != nil {
		return store.CatalogComponent{}, err
	}
	comp, ok := s.components.Component(id)
	if !ok {
		return store.CatalogComponent{}, fault.NotFoundf("no component with id %d (GET /v2/components lists them)", id)
	}
	return comp, nil
}
