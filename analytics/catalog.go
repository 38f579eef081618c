// Package analytics holds the platform's model of building components: the
// catalog of abstract components shipped with the binary (decisions.md 8).
package analytics

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/openbdp/bdp/store"
)

// componentsFile is the catalog this release ships. Identifiers, pin names
// and units follow aedifion's public component data models so that users
// of that platform find the same names.
//
//go:embed catalog/components.json
var componentsFile []byte

// Value types an attribute definition may declare.
var valueTypes = map[string]bool{"float": true, "string": true, "json": true}

// Pin attribute keys: the five levels of a pin's classification.
var pinAttributeKeys = map[string]bool{
	"L1_analog_digital": true, "L2_virtual": true, "L3_direction": true, "L4_type": true, "L5_unit": true,
}

// Pin locations on a component's symbol.
var pinLocations = map[string]bool{"left": true, "right": true, "bottom": true}

// Catalog is the loaded catalog with its persisted numeric ids. It does
// not change after loading.
type Catalog struct {
	components []store.CatalogComponent
	byID       map[int64]int
	functions  []Function
	functionAt map[int64]int
}

// ParseCatalog reads and checks a catalog file: every id present and
// unique in its scope, value types and pin attribute keys known,
// probabilities in [0, 1]. The error names the first fault.
func ParseCatalog(data []byte) ([]store.CatalogComponent, error) {
	var file struct {
		Components []store.CatalogComponent `json:"components"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("component catalog: %w", err)
	}
	if len(file.Components) == 0 {
		return nil, errors.New("component catalog: no components")
	}
	seen := map[string]bool{}
	for _, c := range file.Components {
		if err := checkComponent(c); err != nil {
			return nil, fmt.Errorf("component catalog: component %q: %w", c.AlphanumericID, err)
		}
		if seen[c.AlphanumericID] {
			return nil, fmt.Errorf("component catalog: component %q listed twice", c.AlphanumericID)
		}
		seen[c.AlphanumericID] = true
	}
	return file.Components, nil
}

func checkComponent(c store.CatalogComponent) error {
	if c.ID != 0 {
		return errors.New("numeric ids are assigned by the server, not the file")
	}
	if c.AlphanumericID == "" || c.NameDE == "" || c.NameEN == "" {
		return errors.New("alphanumeric_id, nameDE and nameEN are required")
	}
	pins := map[string]bool{}
	for _, p := range c.Pins {
		if p.AlphanumericID == "" || p.NameDE == "" || p.NameEN == "" || p.ID != 0 {
			return fmt.Errorf("pin %q: alphanumeric_id, nameDE and nameEN are required, id is not allowed", p.AlphanumericID)
		}
		if pins[p.AlphanumericID] {
			return fmt.Errorf("pin %q listed twice", p.AlphanumericID)
		}
		pins[p.AlphanumericID] = true
		if !pinLocations[p.Location] {
			return fmt.Errorf("pin %q: location %q is not left, right or bottom", p.AlphanumericID, p.Location)
		}
		keys := map[string]bool{}
		for _, a := range p.Attributes {
			if !pinAttributeKeys[a.Key] || keys[a.Key] {
				return fmt.Errorf("pin %q: pin attribute key %q unknown or listed twice", p.AlphanumericID, a.Key)
			}
			keys[a.Key] = true
			if math.IsNaN(a.Probability) || a.Probability < 0 || a.Probability > 1 {
				return fmt.Errorf("pin %q: pin attribute %s: probability %v is outside [0, 1]", p.AlphanumericID, a.Key, a.Probability)
			}
		}
	}
	ids, keys := map[string]bool{}, map[string]bool{}
	for _, a := range c.Attributes {
		if a.AlphanumericID == "" || a.Key == "" || a.NameDE == "" || a.NameEN == "" || a.ID != 0 {
			return fmt.Errorf("attribute definition %q: alphanumeric_id, key, nameDE and nameEN are required, id is not allowed", a.AlphanumericID)
		}
		if ids[a.AlphanumericID] || keys[a.Key] {
			return fmt.Errorf("attribute definition %q (key %q) listed twice", a.AlphanumericID, a.Key)
		}
		ids[a.AlphanumericID], keys[a.Key] = true, true
		if !valueTypes[a.ValueType] {
			return fmt.Errorf("attribute definition %q: value_type %q is not float, string or json", a.AlphanumericID, a.ValueType)
		}
	}
	return nil
}

// LoadCatalog checks the catalog shipped with the binary and the analysis
// functions against it, and persists both, giving entries seen for the
// first time their numeric ids.
func LoadCatalog(ctx context.Context, st *store.Store) (*Catalog, error) {
	comps, err := ParseCatalog(componentsFile)
	if err != nil {
		return nil, err
	}
	fns := functionTable()
	if err := checkFunctions(comps, fns); err != nil {
		return nil, err
	}
	c, err := loadComponents(ctx, st, comps)
	if err != nil {
		return nil, err
	}
	if err := c.loadFunctions(ctx, st, fns); err != nil {
		return nil, err
	}
	return c, nil
}

func loadComponents(ctx context.Context, st *store.Store, comps []store.CatalogComponent) (*Catalog, error) {
	persisted, err := st.SyncComponents(ctx, comps)
	if err != nil {
		return nil, err
	}
	c := &Catalog{components: persisted, byID: make(map[int64]int, len(persisted))}
	for i, comp := range persisted {
		c.byID[comp.ID] = i
	}
	return c, nil
}

// Components lists the catalog's components in file order, each without
// its pins and attribute definitions.
func (c *Catalog) Components() []store.CatalogComponent {
	out := make([]store.CatalogComponent, len(c.components))
	for i, comp := range c.components {
		comp.Pins, comp.Attributes = nil, nil
		out[i] = comp
	}
	return out
}

// Component is the component with numeric id id, with its pins and
// attribute definitions; false when the catalog has none.
func (c *Catalog) Component(id int64) (store.CatalogComponent, bool) {
	i, ok := c.byID[id]
	if !ok {
		return store.CatalogComponent{}, false
	}
	return c.components[i], true
}
