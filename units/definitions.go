package units

// Node is one node of the label tree. A leaf has no children; below the
// "units" node a leaf's ID is a usable unit name, below the "currencies"
// node it is a currency code.
type Node struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Symbol   string `json:"symbol,omitempty"`
	Children []Node `json:"children,omitempty"`
}

// DefinitionTree is the answer of GET /v2/labels/definitions:
//
//	{
//	  "units": {"id": "units", "name": "Units", "children": [
//	    {"id": "temperature", "name": "Temperature", "children": [
//	      {"id": "celsius", "name": "degree Celsius", "symbol": "°C"},
//	      {"id": "fahrenheit", "name": "degree Fahrenheit", "symbol": "°F"},
//	      ...]},
//	    {"id": "pressure", "name": "Pressure", "children": [...]},
//	    ...]},
//	  "currencies": {"id": "currencies", "name": "Currencies", "children": [
//	    {"id": "EUR", "name": "Euro", "symbol": "€"},
//	    ...]}
//	}
//
// The ids of the leaves below "units" are the usable unit names (api.md
// 4.7); the dimension nodes between are groups, not units. A price is a
// currency id, "/", and a unit id: "EUR/kWh".
type DefinitionTree struct {
	Units      Node `json:"units"`
	Currencies Node `json:"currencies"`
}

// Definitions builds the label tree from the unit and currency tables, in
// table order. Each call returns a fresh tree the caller may change.
func Definitions() DefinitionTree {
	tree := DefinitionTree{
		Units:      Node{ID: "units", Name: "Units"},
		Currencies: Node{ID: "currencies", Name: "Currencies"},
	}
	for _, d := range dimensions {
		group := Node{ID: string(d.id), Name: d.name}
		for _, u := range units {
			if u.dim == d.id {
				group.Children = append(group.Children, Node{ID: u.id, Name: u.name, Symbol: u.symbol})
			}
		}
		tree.Units.Children = append(tree.Units.Children, group)
	}
	for _, c := range currencies {
		tree.Currencies.Children = append(tree.Currencies.Children, Node{ID: c.code, Name: c.name, Symbol: c.symbol})
	}
	return tree
}
