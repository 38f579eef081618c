package units

import (
	"fmt"
	"strings"
)

// System is one entry of GET /v2/labels/systems.
type System struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// SystemsList is the answer of GET /v2/labels/systems.
type SystemsList struct {
	UnitsSystems    []System `json:"units_systems"`
	CurrencySystems []System `json:"currency_systems"`
}

// unitsSystems lists the units systems; the preferred unit of each dimension
// per system is in the dimensions table (table.go).
var unitsSystems = []System{
	{ID: SI, Name: "International System (SI)"},
	{ID: Imperial, Name: "Imperial / US customary"},
}

// Systems lists the units systems and the currency systems, one per currency
// of the currency table (currency.go).
func Systems() SystemsList {
	list := SystemsList{UnitsSystems: append([]System(nil), unitsSystems...)}
	for _, c := range currencies {
		list.CurrencySystems = append(list.CurrencySystems, System{ID: c.code, Name: c.name})
	}
	return list
}

// unitsSystem resolves a units system id, ignoring case.
func unitsSystem(id string) (string, error) {
	for _, s := range unitsSystems {
		if strings.EqualFold(strings.TrimSpace(id), s.ID) {
			return s.ID, nil
		}
	}
	return "", fmt.Errorf("%w %q: units systems are %s and %s", ErrUnknownSystem, id, SI, Imperial)
}

// ForSystem returns the unit of the units system ("SI" or "imperial") that
// fits the dimension of unit from, as a canonical id:
//
//   - a unit that already belongs to the system stays (mm stays mm in SI,
//     MWh stays MWh), as do units that belong to both systems (percent, ppm,
//     s, V);
//   - any other unit becomes the system's preferred unit of its dimension
//     (table.go): celsius/fahrenheit, Pa/psi, kWh/BTU, kW/BTU/h, m3/h/cfm,
//     m3/ft3, m2/ft2, m/ft, m/s/ft/min, lx/fc, W/m2/BTU/(h*ft2),
//     kWh/m2/kBTU/ft2.
//
// A price keeps its currency and has its per-unit part chosen the same way:
// "EUR/kWh" in imperial is "EUR/BTU". A plain currency ("EUR") stays.
func ForSystem(from, system string) (string, error) {
	sys, err := unitsSystem(system)
	if err != nil {
		return "", err
	}
	p, err := parseName(from)
	if err != nil {
		return "", err
	}
	if p.hasUnit {
		p.unit = inSystem(p.unit, sys)
	}
	return p.String(), nil
}

// inSystem applies the ForSystem rule to one unit.
func inSystem(u Unit, sys string) Unit {
	if u.System == "" || u.System == sys {
		return u
	}
	for _, d := range dimensions {
		if d.id == u.Dimension {
			if id, ok := d.preferred[sys]; ok {
				pref, _ := Lookup(id)
				return pref
			}
		}
	}
	return u
}
