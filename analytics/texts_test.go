package analytics

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// filled is t with the outcome's figures written in as a reader in the
// kernel's units sees them.
func filled(out Outcome, t Text) Text {
	figures := map[string]Figure{}
	for _, k := range append(append([]OutcomeKPI{}, out.KPIs...), out.Thresholds...) {
		figures[k.Identifier] = Figure{Value: Round(k.Value), Unit: k.Unit}
	}
	return Text{EN: Fill(t.EN, "en", figures), DE: Fill(t.DE, "de", figures)}
}

// Every figure a text states is one the outcome reports (a KPI or a
// threshold the run judged against), rounded as the KPI list shows it; no
// mark or placeholder is left (X, Y, a tolerance without its value), in
// either language: the interpretation, the recommendations, the KPI and
// summary names.
func TestTextsStateTheOutcomesFigures(t *testing.T) {
	// Numbers that are names, not figures.
	names := regexp.MustCompile(`IDA [1-4]|CO2`)
	placeholder := regexp.MustCompile(`[{}]|\b[XY]\b|tolerance \(|Toleranz \(|der Toleranz|the tolerance`)
	for _, f := range functionTable() {
		for _, tc := range runCases[f.AlphanumericID] {
			if tc.err != nil || tc.noData {
				continue
			}
			t.Run(f.AlphanumericID+"/"+tc.name, func(t *testing.T) {
				period := tc.period
				if period.Start.IsZero() {
					period = hoursFrom(runStart, 4)
				}
				out, err := f.Run(Input{Component: tc.component, Period: period, Series: tc.series, Attributes: tc.attrs})
				if err != nil {
					t.Fatal(err)
				}
				shown := map[string]bool{}
				for _, k := range append(append([]OutcomeKPI{}, out.KPIs...), out.Thresholds...) {
					shown[strconv.FormatFloat(Round(k.Value), 'f', -1, 64)] = true
				}
				texts := append([]Text{out.Interpretation, out.Summary.Name}, out.Recommendation...)
				for _, k := range out.KPIs {
					texts = append(texts, k.Name)
				}
				for _, raw := range texts {
					text := filled(out, raw)
					for lang, s := range map[string]string{"en": text.EN, "de": text.DE} {
						if m := placeholder.FindString(s); m != "" {
							t.Errorf("%s text holds %q: %s", lang, m, s)
						}
						for _, n := range number.FindAllString(names.ReplaceAllString(strings.ReplaceAll(s, ",", "."), ""), -1) {
							if !shown[n] {
								t.Errorf("%s text states %s, which is no figure of the outcome (%v): %s", lang, n, shown, s)
							}
						}
					}
				}
			})
		}
	}
}
