package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// CatalogComponent is an abstract component of the analytics catalog
// (api.md 2.14) with its pin placeholders and attribute definitions. The
// JSON names are those of the catalog file and of the API.
type CatalogComponent struct {
	ID             int64                 `json:"id"`
	AlphanumericID string                `json:"alphanumeric_id"`
	NameDE         string                `json:"nameDE"`
	NameEN         string                `json:"nameEN"`
	Pins           []CatalogPin          `json:"pins"`
	Attributes     []AttributeDefinition `json:"attribute_definitions"`
}

// CatalogPin is a pin placeholder: where a datapoint of the building can be
// mapped onto the component.
type CatalogPin struct {
	ID             int64          `json:"id"`
	AlphanumericID string         `json:"alphanumeric_id"`
	NameDE         string         `json:"nameDE"`
	NameEN         string         `json:"nameEN"`
	Location       string         `json:"location" doc:"where the pin sits on the component's symbol: left, right or bottom"`
	Unit           string         `json:"unit" doc:"the unit the analysis functions expect of the mapped datapoint; empty: any"`
	Attributes     []PinAttribute `json:"pin_attributes"`
}

// PinAttribute is one level (L1 to L5) of a pin's classification with how
// likely a datapoint fitting the pin has that value.
type PinAttribute struct {
	ID          int64   `json:"id"`
	Key         string  `json:"key"`
	Value       string  `json:"value"`
	Probability float64 `json:"probability" doc:"0 to 1"`
}

// AttributeDefinition is a value a mapped component can be given (a
// schedule, a nominal power), checked against ValueType.
type AttributeDefinition struct {
	ID             int64  `json:"id"`
	AlphanumericID string `json:"alphanumeric_id"`
	Key            string `json:"key"`
	NameDE         string `json:"nameDE"`
	NameEN         string `json:"nameEN"`
	ValueType      string `json:"value_type" doc:"float, string or json"`
	Unit           string `json:"unit,omitempty"`
}

// SyncComponents upserts the catalog by alphanumeric id and returns it with
// the persisted numeric ids filled in. An entry keeps its id across calls;
// an entry seen for the first time gets a new one, so nothing is
// renumbered. Safe from several nodes at once: the table lock serialises
// them.
func (s *Store) SyncComponents(ctx context.Context, comps []CatalogComponent) ([]CatalogComponent, error) {
	out := make([]CatalogComponent, len(comps))
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE components IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		// Three rounds, each one batch: components, then their pins and
		// attribute definitions, then the pins' attributes.
		b := &pgx.Batch{}
		for i, c := range comps {
			out[i] = c
			out[i].Pins = append([]CatalogPin(nil), c.Pins...)
			out[i].Attributes = append([]AttributeDefinition(nil), c.Attributes...)
			b.Queue(`INSERT INTO components (alphanumeric_id, name_de, name_en) VALUES ($1, $2, $3)
				ON CONFLICT (alphanumeric_id) DO UPDATE SET name_de = EXCLUDED.name_de, name_en = EXCLUDED.name_en
				RETURNING id`, c.AlphanumericID, c.NameDE, c.NameEN).QueryRow(func(r pgx.Row) error { return r.Scan(&out[i].ID) })
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("components: %w", err)
		}
		b = &pgx.Batch{}
		for i := range out {
			c := &out[i]
			for j := range c.Pins {
				p := &c.Pins[j]
				p.Attributes = append([]PinAttribute(nil), p.Attributes...)
				b.Queue(`INSERT INTO component_pins (component_id, alphanumeric_id, name_de, name_en, location, unit)
					VALUES ($1, $2, $3, $4, $5, $6)
					ON CONFLICT (component_id, alphanumeric_id) DO UPDATE SET name_de = EXCLUDED.name_de,
						name_en = EXCLUDED.name_en, location = EXCLUDED.location, unit = EXCLUDED.unit
					RETURNING id`, c.ID, p.AlphanumericID, p.NameDE, p.NameEN, p.Location, p.Unit).
					QueryRow(func(r pgx.Row) error { return r.Scan(&p.ID) })
			}
			for j := range c.Attributes {
				a := &c.Attributes[j]
				// The key is unique per component too: a file that moves a
				// key to another alphanumeric id frees it first.
				b.Queue(`DELETE FROM component_attribute_definitions WHERE component_id = $1 AND key = $2 AND alphanumeric_id <> $3`,
					c.ID, a.Key, a.AlphanumericID)
				b.Queue(`INSERT INTO component_attribute_definitions (component_id, alphanumeric_id, key, name_de, name_en, value_type, unit)
					VALUES ($1, $2, $3, $4, $5, $6, $7)
					ON CONFLICT (component_id, alphanumeric_id) DO UPDATE SET key = EXCLUDED.key, name_de = EXCLUDED.name_de,
						name_en = EXCLUDED.name_en, value_type = EXCLUDED.value_type, unit = EXCLUDED.unit
					RETURNING id`, c.ID, a.AlphanumericID, a.Key, a.NameDE, a.NameEN, a.ValueType, a.Unit).
					QueryRow(func(r pgx.Row) error { return r.Scan(&a.ID) })
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("component pins and attribute definitions: %w", err)
		}
		b = &pgx.Batch{}
		for i := range out {
			for j := range out[i].Pins {
				p := &out[i].Pins[j]
				for k := range p.Attributes {
					a := &p.Attributes[k]
					b.Queue(`INSERT INTO component_pin_attributes (pin_id, key, value, probability) VALUES ($1, $2, $3, $4)
						ON CONFLICT (pin_id, key) DO UPDATE SET value = EXCLUDED.value, probability = EXCLUDED.probability
						RETURNING id`, p.ID, a.Key, a.Value, a.Probability).
						QueryRow(func(r pgx.Row) error { return r.Scan(&a.ID) })
				}
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("component pin attributes: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("persist component catalog: %w", err)
	}
	return out, nil
}
