package analytics

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/openbdp/bdp/store"
)

// checkFunctions checks the function table against the component catalog:
// every component a function fits exists, every pin role names an
// existing pin of each component it lists and only components the
// function fits, every required role has a pin on each fitting component,
// and every attribute key is defined on each fitting component (on at
// least one for the keys in someComponents). The error names the first
// fault, so a renamed pin stops the server at start, not a run later.
func checkFunctions(comps []store.CatalogComponent, fns []Function) error {
	byID := make(map[string]store.CatalogComponent, len(comps))
	for _, c := range comps {
		byID[c.AlphanumericID] = c
	}
	seen := map[string]bool{}
	for _, f := range fns {
		if err := checkFunction(byID, f); err != nil {
			return fmt.Errorf("analysis function %s: %w", f.AlphanumericID, err)
		}
		if seen[f.AlphanumericID] {
			return fmt.Errorf("analysis function %s listed twice", f.AlphanumericID)
		}
		seen[f.AlphanumericID] = true
	}
	return nil
}

func checkFunction(byID map[string]store.CatalogComponent, f Function) error {
	if f.AlphanumericID == "" || f.NameDE == "" || f.NameEN == "" || f.run == nil || f.explain == nil {
		return errors.New("alphanumeric id, names, kernel and texts are required")
	}
	if !slices.Contains(f.KPIs, f.SummaryKPI) {
		return fmt.Errorf("summary KPI %q is not one of its KPIs", f.SummaryKPI)
	}
	for _, id := range f.KPIs {
		if _, ok := kpiTexts[id]; !ok {
			return fmt.Errorf("KPI %q has no name", id)
		}
	}
	for _, comp := range f.Components {
		c, ok := byID[comp]
		if !ok {
			return fmt.Errorf("component %q is not in the catalog", comp)
		}
		for _, p := range f.Pins {
			pin, ok := p.PinIDs[comp]
			if !ok {
				if p.Required {
					return fmt.Errorf("required pin role %s has no pin on component %s", p.Role, comp)
				}
				continue
			}
			if !slices.ContainsFunc(c.Pins, func(cp store.CatalogPin) bool { return cp.AlphanumericID == pin }) {
				return fmt.Errorf("pin role %s: component %s has no pin %q", p.Role, comp, pin)
			}
		}
		for _, p := range f.Pins {
			if p.oneOf != "" && !slices.ContainsFunc(f.Pins, func(q FunctionPin) bool { return q.oneOf == p.oneOf && q.PinIDs[comp] != "" }) {
				return fmt.Errorf("pin group %s has no pin on component %s", p.oneOf, comp)
			}
		}
		for _, key := range f.Attributes {
			defined := slices.ContainsFunc(c.Attributes, func(a store.AttributeDefinition) bool { return a.Key == key })
			if !defined && !slices.Contains(f.someComponents, key) {
				return fmt.Errorf("attribute %q is not defined on component %s", key, comp)
			}
		}
	}
	for _, p := range f.Pins {
		for comp := range p.PinIDs {
			if !f.Fits(comp) {
				return fmt.Errorf("pin role %s names a pin of component %s, which the function does not fit", p.Role, comp)
			}
		}
	}
	for _, key := range f.someComponents {
		if !slices.ContainsFunc(f.Components, func(comp string) bool {
			return slices.ContainsFunc(byID[comp].Attributes, func(a store.AttributeDefinition) bool { return a.Key == key })
		}) {
			return fmt.Errorf("attribute %q is defined on none of its components", key)
		}
	}
	return nil
}

// loadFunctions persists the function table and keeps it with its
// numeric ids.
func (c *Catalog) loadFunctions(ctx context.Context, st *store.Store, fns []Function) error {
	rows := make([]store.AnalysisFunctionRow, len(fns))
	for i, f := range fns {
		rows[i] = store.AnalysisFunctionRow{AlphanumericID: f.AlphanumericID, NameDE: f.NameDE, NameEN: f.NameEN}
	}
	ids, err := st.SyncAnalysisFunctions(ctx, rows)
	if err != nil {
		return err
	}
	c.functions = fns
	c.functionAt = make(map[int64]int, len(fns))
	for i := range c.functions {
		c.functions[i].ID = ids[c.functions[i].AlphanumericID]
		c.functionAt[c.functions[i].ID] = i
	}
	return nil
}

// Functions lists the release's analysis functions in table order.
func (c *Catalog) Functions() []Function { return slices.Clone(c.functions) }

// Function is the analysis function with numeric id id; false when there
// is none.
func (c *Catalog) Function(id int64) (Function, bool) {
	i, ok := c.functionAt[id]
	if !ok {
		return Function{}, false
	}
	return c.functions[i], true
}

// FunctionsFor lists the functions that fit the component with this
// alphanumeric id, in table order; none for an unknown component.
func (c *Catalog) FunctionsFor(componentAlphanumericID string) []Function {
	var out []Function
	for _, f := range c.functions {
		if f.Fits(componentAlphanumericID) {
			out = append(out, f)
		}
	}
	return out
}

// ComponentByAlphanumericID is the component with this alphanumeric id,
// with its pins and attribute definitions; false when the catalog has
// none.
func (c *Catalog) ComponentByAlphanumericID(id string) (store.CatalogComponent, bool) {
	i := slices.IndexFunc(c.components, func(comp store.CatalogComponent) bool { return comp.AlphanumericID == id })
	if i < 0 {
		return store.CatalogComponent{}, false
	}
	return c.components[i], true
}
