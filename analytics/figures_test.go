package analytics

import "testing"

func TestRound(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{33.33333333333311, 33.33}, {719.1666, 719.17}, {-2.005, -2.0}, {0.004321, 0.00432}, {0.5, 0.5},
		{0, 0}, {1e6 / 3, 333333.33}, {-0.0123456, -0.0123},
	} {
		if got := Round(c.in); got != c.want {
			t.Errorf("Round(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestFill(t *testing.T) {
	figures := map[string]Figure{"cost": {Value: 12.5, Unit: "USD"}, "share": {Value: 33.33, Unit: "%"}, "starts": {Value: 3, Unit: "count"}}
	for _, c := range []struct{ text, lang, want string }{
		{"It cost {cost}.", "en", "It cost 12.5 USD."},
		{"Sie kostete {cost}.", "de", "Sie kostete 12,5 USD."},
		{"{share} of the time, {#starts} starts ({starts})", "en", "33.33 % of the time, 3 starts (3)"},
		{"unknown {nothing} stays", "en", "unknown {nothing} stays"},
		{"no marks at all", "de", "no marks at all"},
		{"open { without end", "en", "open { without end"},
	} {
		if got := Fill(c.text, c.lang, figures); got != c.want {
			t.Errorf("Fill(%q, %s) = %q, want %q", c.text, c.lang, got, c.want)
		}
	}
}
