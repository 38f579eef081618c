package http

import (
	"encoding/json"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/units"
)

// GET /v2/labels/systems and /v2/labels/definitions (api.md 4.7) list
// what the timeseries conversion parameters accept, and the operator's
// exchange rates (GET and PUT /operator/currency-rates) feed
// currency_system.

// The label answers come from tables compiled into the binary, so each is
// encoded once.
var (
	systemsJSON     = sync.OnceValue(func() []byte { return mustJSON(units.Systems()) })
	definitionsJSON = sync.OnceValue(func() []byte { return mustJSON(units.Definitions()) })
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs of strings: cannot fail
	}
	return b
}

func (s *Server) labelSystems(*fiber.Ctx, *call) (any, error) { return rawJSON(systemsJSON()), nil }

// labelDefinitions answers the label tree, in English: aedifion's
// language parameter is taken for en and refused for any other language
// rather than answered in English regardless.
func (s *Server) labelDefinitions(c *fiber.Ctx, _ *call) (any, error) {
	if lang := c.Query("language"); lang != "" && lang != "en" {
		return nil, fault.Invalidf("language %q is not supported: bdp's labels are in English only (en)", fault.Clip(lang))
	}
	return rawJSON(definitionsJSON()), nil
}

// labelTree documents GET /v2/labels/definitions. units.Node is recursive,
// which the OpenAPI schema builder does not follow, so children are
// documented one level deep.
type labelTree struct {
	Units      labelNode `json:"units" doc:"dimension groups; the ids of their leaves are the usable unit names"`
	Currencies labelNode `json:"currencies" doc:"the currencies; their ids are currency systems and price prefixes (EUR/kWh)"`
}

type labelNode struct {
	ID       string           `json:"id"`
	Name     string           `json:"name"`
	Symbol   string           `json:"symbol" doc:"display symbol, when there is one"`
	Children []map[string]any `json:"children" doc:"nodes of the same shape; leaves have none"`
}

// currencyRatesBody is PUT /operator/currency-rates: currency code to the
// value of one unit of it in the base currency (EUR by default: USD 0.86
// means 1 USD = 0.86 EUR), as package units reads rates.
type currencyRatesBody map[string]float64

func (s *Server) getCurrencyRates(c *fiber.Ctx, _ *call) (any, error) {
	rates, err := s.store.CurrencyRates(c.UserContext())
	if err != nil {
		return nil, err
	}
	return ok("", rates), nil
}

// putCurrencyRates sets the rates named in the body; the others stay.
func (s *Server) putCurrencyRates(c *fiber.Ctx, _ *call) (any, error) {
	var req currencyRatesBody
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	// units.NewRates is the judge of what a rate table may hold: known
	// currencies (by code or symbol), finite positive rates. Its table
	// comes back keyed by code.
	r, err := units.NewRates(req)
	if err != nil {
		return nil, fault.Wrap(fault.Invalid, err, err.Error())
	}
	rates, err := s.store.SetCurrencyRates(c.UserContext(), r.Table())
	if err != nil {
		return nil, err
	}
	return ok("update", rates), nil
}
