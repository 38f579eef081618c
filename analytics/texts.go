package analytics

import "strings"

// kpiText is a KPI's name in both languages with the unit its kernel
// reports it in (the unit of energy cost is the price's currency).
type kpiText struct {
	en, de, unit string
}

// Marks of the thresholds that KPI names and texts state.
const (
	devX       = "{setpoint deviation.large}"
	devY       = "{setpoint deviation.tolerance}"
	minSpread  = "{temperature spread.required minimum}"
	outdoorTol = "{temperature difference.tolerance}"
	curveTol   = "{heating curve deviation.tolerance}"
)

// kpiTexts names every KPI identifier a function reports, and the
// thresholds a run reports beside them. The identifiers are aedifion's
// where its specification names them.
var kpiTexts = map[string]kpiText{
	"operating time":          {"operating time", "Betriebszeit", "h"},
	"operating time.relative": {"operating time, share of the time with data", "Betriebszeit, Anteil an der Zeit mit Daten", "%"},

	// X and Y of aedifion's identifiers are the bands the run used: the
	// names state them (marks, figures.go).
	"setpoint deviation.largerX.relative":         {"deviation above " + devX + ", share of time", "Abweichung über " + devX + ", Zeitanteil", "%"},
	"setpoint deviation.largerYsmallerX.relative": {"deviation between " + devY + " and " + devX + ", share of time", "Abweichung zwischen " + devY + " und " + devX + ", Zeitanteil", "%"},
	"setpoint deviation.smallerY.relative":        {"deviation within ±" + devY + ", share of time", "Abweichung innerhalb ±" + devY + ", Zeitanteil", "%"},
	"setpoint deviation.largerX":                  {"deviation above " + devX, "Abweichung über " + devX, "h"},
	"setpoint deviation.largerYsmallerX":          {"deviation between " + devY + " and " + devX, "Abweichung zwischen " + devY + " und " + devX, "h"},
	"setpoint deviation.smallerY":                 {"deviation within ±" + devY, "Abweichung innerhalb ±" + devY, "h"},
	"setpoint deviation.tolerance":                {"tolerance (Y)", "Toleranz (Y)", "K"},
	"setpoint deviation.large":                    {"large deviation (X)", "große Abweichung (X)", "K"},
	"setpoint deviation.maximum":                  {"largest deviation", "größte Abweichung", "-"},
	"setpoint deviation.minimum":                  {"smallest deviation", "kleinste Abweichung", "-"},
	"setpoint deviation.mean":                     {"mean deviation", "mittlere Abweichung", "-"},
	"setpoint deviation.median":                   {"median deviation", "Median der Abweichung", "-"},

	"co2 duration.IDA1.relative": {"IDA 1 (good air), share of time", "IDA 1 (gute Luft), Zeitanteil", "%"},
	"co2 duration.IDA2.relative": {"IDA 2 (medium air), share of time", "IDA 2 (mittlere Luft), Zeitanteil", "%"},
	"co2 duration.IDA3.relative": {"IDA 3 (moderate air), share of time", "IDA 3 (mäßige Luft), Zeitanteil", "%"},
	"co2 duration.IDA4.relative": {"IDA 4 (poor air), share of time", "IDA 4 (schlechte Luft), Zeitanteil", "%"},
	"co2 duration.IDA1.absolute": {"IDA 1 (good air)", "IDA 1 (gute Luft)", "h"},
	"co2 duration.IDA2.absolute": {"IDA 2 (medium air)", "IDA 2 (mittlere Luft)", "h"},
	"co2 duration.IDA3.absolute": {"IDA 3 (moderate air)", "IDA 3 (mäßige Luft)", "h"},
	"co2 duration.IDA4.absolute": {"IDA 4 (poor air)", "IDA 4 (schlechte Luft)", "h"},
	"co2.maximum":                {"highest CO2 concentration", "höchste CO2-Konzentration", "ppm"},
	"co2.minimum":                {"lowest CO2 concentration", "niedrigste CO2-Konzentration", "ppm"},
	"co2.mean":                   {"mean CO2 concentration", "mittlere CO2-Konzentration", "ppm"},
	"co2.median":                 {"median CO2 concentration", "Median der CO2-Konzentration", "ppm"},

	"Q_dot.mean":              {"mean heat flow", "mittlerer Wärmestrom", "kW"},
	"Q_dot.medium":            {"median heat flow", "Median des Wärmestroms", "kW"},
	"Q_dot.minimum":           {"smallest heat flow", "kleinster Wärmestrom", "kW"},
	"Q_dot.maximum":           {"largest heat flow", "größter Wärmestrom", "kW"},
	"Q.total":                 {"heat delivered", "gelieferte Wärme", "kWh"},
	"Q_dot.negative":          {"time with negative heat flow", "Zeit mit negativem Wärmestrom", "h"},
	"Q_dot.negative.relative": {"time with negative heat flow, share", "Zeit mit negativem Wärmestrom, Anteil", "%"},

	"starts":                   {"starts", "Starts", "count"},
	"closed operating cycles":  {"closed operating cycles", "abgeschlossene Betriebszyklen", "count"},
	"cycle times.median":       {"median cycle time", "Median der Zykluszeit", "h"},
	"cycle times.average":      {"mean cycle time", "mittlere Zykluszeit", "h"},
	"cycle times.minimum":      {"shortest cycle time", "kürzeste Zykluszeit", "h"},
	"cycle times.maximum":      {"longest cycle time", "längste Zykluszeit", "h"},
	"duty times.median":        {"median duty time", "Median der Laufzeit", "h"},
	"duty times.average":       {"mean duty time", "mittlere Laufzeit", "h"},
	"duty times.minimum":       {"shortest duty time", "kürzeste Laufzeit", "h"},
	"duty times.maximum":       {"longest duty time", "längste Laufzeit", "h"},
	"switch-off times.median":  {"median switch-off time", "Median der Stillstandszeit", "h"},
	"switch-off times.average": {"mean switch-off time", "mittlere Stillstandszeit", "h"},
	"switch-off times.minimum": {"shortest switch-off time", "kürzeste Stillstandszeit", "h"},
	"switch-off times.maximum": {"longest switch-off time", "längste Stillstandszeit", "h"},

	"temperature spread.average":                {"mean temperature spread", "mittlere Temperaturspreizung", "K"},
	"temperature spread.minimum":                {"smallest temperature spread", "kleinste Temperaturspreizung", "K"},
	"temperature spread.maximum":                {"largest temperature spread", "größte Temperaturspreizung", "K"},
	"temperature spread.below minimum":          {"time with spread below " + minSpread, "Zeit mit Spreizung unter " + minSpread, "h"},
	"temperature spread.below minimum.relative": {"time with spread below " + minSpread + ", share", "Zeit mit Spreizung unter " + minSpread + ", Anteil", "%"},
	"temperature spread.required minimum":       {"required minimum spread", "geforderte Mindestspreizung", "K"},

	"temperature difference.mean":                      {"mean difference to reference", "mittlere Differenz zur Referenz", "K"},
	"temperature difference.maximum":                   {"largest difference to reference", "größte Differenz zur Referenz", "K"},
	"temperature difference.within tolerance":          {"time within ±" + outdoorTol, "Zeit innerhalb ±" + outdoorTol, "h"},
	"temperature difference.within tolerance.relative": {"time within ±" + outdoorTol + ", share", "Zeit innerhalb ±" + outdoorTol + ", Anteil", "%"},
	"temperature difference.tolerance":                 {"tolerance", "Toleranz", "K"},
	"radiation influenced.total":                       {"days influenced by sun radiation", "durch Sonnenstrahlung beeinflusste Tage", "days"},
	"radiation influenced.relative":                    {"days influenced by sun radiation, share", "durch Sonnenstrahlung beeinflusste Tage, Anteil", "%"},

	"thermal comfort.categoryI":            {"category I", "Kategorie I", "h"},
	"thermal comfort.categoryI.relative":   {"category I, share of time", "Kategorie I, Zeitanteil", "%"},
	"thermal comfort.categoryII":           {"category II", "Kategorie II", "h"},
	"thermal comfort.categoryII.relative":  {"category II, share of time", "Kategorie II, Zeitanteil", "%"},
	"thermal comfort.categoryIII":          {"category III", "Kategorie III", "h"},
	"thermal comfort.categoryIII.relative": {"category III, share of time", "Kategorie III, Zeitanteil", "%"},
	"thermal comfort.categoryIV":           {"category IV (outside III)", "Kategorie IV (außerhalb III)", "h"},
	"thermal comfort.categoryIV.relative":  {"category IV (outside III), share of time", "Kategorie IV (außerhalb III), Zeitanteil", "%"},
	"operative temperature.mean":           {"mean operative temperature", "mittlere operative Temperatur", "°C"},
	"operative temperature.minimum":        {"lowest operative temperature", "niedrigste operative Temperatur", "°C"},
	"operative temperature.maximum":        {"highest operative temperature", "höchste operative Temperatur", "°C"},
	"operation outside schedule":           {"operation outside the schedule", "Betrieb außerhalb des Zeitplans", "h"},
	"operation outside schedule.relative":  {"operation outside the schedule, share of operating time", "Betrieb außerhalb des Zeitplans, Anteil an der Betriebszeit", "%"},
	"no operation inside schedule":         {"no operation inside the schedule", "kein Betrieb innerhalb des Zeitplans", "h"},
	"heating curve deviation.mean":         {"mean deviation from the heating curve", "mittlere Abweichung von der Heizkurve", "K"},
	"heating curve deviation.maximum":      {"largest deviation from the heating curve", "größte Abweichung von der Heizkurve", "K"},
	"heating curve deviation.within tolerance": {
		"time within ±" + curveTol + " of the heating curve", "Zeit innerhalb ±" + curveTol + " um die Heizkurve", "h"},
	"heating curve deviation.within tolerance.relative": {
		"time within ±" + curveTol + " of the heating curve, share", "Zeit innerhalb ±" + curveTol + " um die Heizkurve, Anteil", "%"},
	"heating curve deviation.above tolerance": {"time more than " + curveTol + " above the heating curve", "Zeit mehr als " + curveTol + " über der Heizkurve", "h"},
	"heating curve deviation.below tolerance": {"time more than " + curveTol + " below the heating curve", "Zeit mehr als " + curveTol + " unter der Heizkurve", "h"},
	"heating curve deviation.tolerance":       {"tolerance", "Toleranz", "K"},

	"control error.sign changes":          {"sign changes of the control error", "Vorzeichenwechsel der Regelabweichung", "count"},
	"control error.sign changes per hour": {"sign changes of the control error per hour", "Vorzeichenwechsel der Regelabweichung je Stunde", "1/h"},
	"control error.amplitude.average":     {"mean amplitude of the control error", "mittlere Amplitude der Regelabweichung", "-"},
	"control error.amplitude.maximum":     {"largest amplitude of the control error", "größte Amplitude der Regelabweichung", "-"},

	"energy consumption": {"energy consumption", "Energieverbrauch", "kWh"},
	"power.mean":         {"mean power", "mittlere Leistung", "kW"},
	"power.maximum":      {"peak power", "Spitzenleistung", "kW"},
	"base load":          {"base load", "Grundlast", "kW"},
	"base load.relative": {"base load, share of mean power", "Grundlast, Anteil an der mittleren Leistung", "%"},
	"energy cost":        {"energy cost", "Energiekosten", ""},
}

func kpiName(id string) Text {
	t, ok := kpiTexts[id]
	if !ok {
		return Text{EN: id, DE: id}
	}
	return Text{EN: t.en, DE: t.de}
}

func summaryUnit(id string) string { return kpiTexts[id].unit }

// plotTexts gives each kernel plot (by the kernel's title) an identifier
// and a title in both languages.
var plotTexts = map[string]struct {
	id     string
	en, de string
}{
	"setpoint deviation":                          {"setpoint_deviation", "Time per deviation band", "Zeit je Abweichungsband"},
	"co2 duration per indoor air class":           {"co2_duration", "Time per indoor air class (EN 13779)", "Zeit je Raumluftklasse (EN 13779)"},
	"heat flux":                                   {"heat_flow", "Heat flow statistics", "Kennwerte des Wärmestroms"},
	"operating time":                              {"operating_time", "Time on and off", "Zeit in und außer Betrieb"},
	"duty time per closed cycle":                  {"duty_times", "Duty time per closed cycle (by start)", "Laufzeit je abgeschlossenem Zyklus (nach Start)"},
	"temperature spread against minimum":          {"temperature_spread", "Time below and above the minimum spread", "Zeit unter und über der Mindestspreizung"},
	"outdoor temperature against reference":       {"temperature_difference", "Time within and outside the tolerance", "Zeit innerhalb und außerhalb der Toleranz"},
	"thermal comfort categories (heating season)": {"thermal_comfort", "Time per comfort category (heating season)", "Zeit je Komfortkategorie (Heizperiode)"},
	"thermal comfort categories (cooling season)": {"thermal_comfort", "Time per comfort category (cooling season)", "Zeit je Komfortkategorie (Kühlperiode)"},
	"operation against schedule":                  {"schedule", "Operation against the schedule", "Betrieb im Vergleich zum Zeitplan"},
	"supply temperature against heating curve":    {"heating_curve", "Supply temperature against the heating curve", "Vorlauftemperatur im Vergleich zur Heizkurve"},
	"control error amplitude per half-wave":       {"control_error_amplitude", "Control error amplitude per half-wave (by start)", "Amplitude der Regelabweichung je Halbwelle (nach Beginn)"},
	"energy consumption":                          {"energy_consumption", "Energy: base load and above", "Energie: Grundlast und darüber"},
}

func plotTitle(kernelTitle string) (string, Text) {
	t, ok := plotTexts[kernelTitle]
	if !ok {
		return strings.ReplaceAll(kernelTitle, " ", "_"), Text{EN: kernelTitle, DE: kernelTitle}
	}
	return t.id, Text{EN: t.en, DE: t.de}
}

var (
	noDataInterpretation = Text{
		EN: "The period holds no data to analyse: the mapped pins had no values in it (or none at the same time).",
		DE: "Der Zeitraum enthält keine auswertbaren Daten: Die zugeordneten Pins hatten darin keine (oder keine gleichzeitigen) Werte.",
	}
	noDataRecommendation = Text{
		EN: "Check that the mapped datapoints deliver data for this period, then run the analysis again.",
		DE: "Prüfen Sie, ob die zugeordneten Datenpunkte in diesem Zeitraum Daten liefern, und führen Sie die Analyse erneut aus.",
	}
)
