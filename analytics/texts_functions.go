package analytics

import "github.com/openbdp/bdp/analytics/kpi"

// The interpretation and recommendations of each function's result with
// data. The interpretation states the key figures; the recommendations
// fit the signal color (kpi's thresholds, documented with each kernel).

// value is the KPI id of res, 0 when the kernel did not report it.
func value(res kpi.Result, id string) float64 {
	k, _ := res.KPI(id)
	return k.Value
}

// byColor picks the recommendations for res's color.
func byColor(res kpi.Result, green, yellow, red []Text) []Text {
	switch res.Color {
	case kpi.Green:
		return green
	case kpi.Yellow:
		return yellow
	}
	return red
}

var keepMonitoring = Text{
	EN: "No action needed; run the analysis again after changes to the plant or its control.",
	DE: "Kein Handlungsbedarf; wiederholen Sie die Analyse nach Änderungen an der Anlage oder ihrer Regelung.",
}

func explainAirQuality(res kpi.Result) (Text, []Text) {
	in := say("The air was good (IDA 1) for %s %% of the time with data and poor (IDA 4) for %s %%; the mean CO2 concentration was %s ppm, the highest %s ppm.",
		"Die Luft war %s %% der Zeit mit Daten gut (IDA 1) und %s %% schlecht (IDA 4); die mittlere CO2-Konzentration betrug %s ppm, die höchste %s ppm.",
		value(res, "co2 duration.IDA1.relative"), value(res, "co2 duration.IDA4.relative"), value(res, "co2.mean"), value(res, "co2.maximum"))
	return in, byColor(res, []Text{keepMonitoring},
		[]Text{{
			EN: "Ventilate more during occupancy: extend the ventilation times or raise the outdoor air flow.",
			DE: "Lüften Sie während der Nutzung mehr: Verlängern Sie die Lüftungszeiten oder erhöhen Sie den Außenluftvolumenstrom.",
		}},
		[]Text{{
			EN: "The room is not ventilated enough for its occupancy: raise the outdoor air flow, ventilate by CO2 demand, or reduce the occupancy.",
			DE: "Der Raum wird für seine Belegung zu wenig belüftet: Erhöhen Sie den Außenluftvolumenstrom, lüften Sie CO2-geführt oder verringern Sie die Belegung.",
		}, {
			EN: "If the values look implausible (below the outdoor concentration, or constant), have the CO2 sensor checked and calibrated.",
			DE: "Wirken die Werte unplausibel (unter der Außenluftkonzentration oder konstant), lassen Sie den CO2-Fühler prüfen und kalibrieren.",
		}})
}

func explainCycle(res kpi.Result) (Text, []Text) {
	in := say("The component had %s starts and ran for %s h (%s %% of the time with data); %s operating cycles closed.",
		"Die Komponente hatte %s Starts und lief %s h (%s %% der Zeit mit Daten); %s Betriebszyklen wurden abgeschlossen.",
		value(res, "starts"), value(res, "operating time"), value(res, "operating time.relative"), value(res, "closed operating cycles"))
	if k, ok := res.KPI("duty times.median"); ok {
		more := say(" A cycle ran for %s h in the median.", " Ein Zyklus lief im Median %s h.", k.Value)
		in.EN += more.EN
		in.DE += more.DE
	}
	return in, byColor(res, []Text{keepMonitoring},
		[]Text{{
			EN: "The component starts often: widen the switching hysteresis or raise the minimum run and pause times.",
			DE: "Die Komponente startet häufig: Vergrößern Sie die Schalthysterese oder erhöhen Sie Mindestlauf- und Mindeststillstandszeiten.",
		}},
		[]Text{{
			EN: "The component short-cycles, which wears it and wastes energy at every start: check whether it is oversized for the load, widen the hysteresis, or add buffer storage.",
			DE: "Die Komponente taktet, was sie verschleißt und bei jedem Start Energie kostet: Prüfen Sie, ob sie für die Last überdimensioniert ist, vergrößern Sie die Hysterese oder ergänzen Sie einen Pufferspeicher.",
		}})
}

func explainComfort(res kpi.Result) (Text, []Text) {
	in := say("The operative temperature was in comfort categories I or II for %s %% of the time with data and outside category III for %s %%; it averaged %s °C (from %s to %s °C).",
		"Die operative Temperatur lag %s %% der Zeit mit Daten in den Komfortkategorien I oder II und %s %% außerhalb der Kategorie III; sie betrug im Mittel %s °C (von %s bis %s °C).",
		value(res, "thermal comfort.categoryI.relative")+value(res, "thermal comfort.categoryII.relative"),
		value(res, "thermal comfort.categoryIV.relative"), value(res, "operative temperature.mean"),
		value(res, "operative temperature.minimum"), value(res, "operative temperature.maximum"))
	return in, byColor(res, []Text{keepMonitoring},
		[]Text{{
			EN: "Comfort is acceptable but not good: check the room's setpoints and heating or cooling times against its use.",
			DE: "Die Behaglichkeit ist annehmbar, aber nicht gut: Prüfen Sie Sollwerte sowie Heiz- und Kühlzeiten des Raums gegen seine Nutzung.",
		}},
		[]Text{{
			EN: "The room is often too warm or too cold: check the room control, the supply of heat or cold, solar shading and the setpoints.",
			DE: "Der Raum ist oft zu warm oder zu kalt: Prüfen Sie die Raumregelung, die Wärme- oder Kälteversorgung, den Sonnenschutz und die Sollwerte.",
		}})
}

func explainEnergy(res kpi.Result) (Text, []Text) {
	in := say("The meter recorded %s kWh at a mean power of %s kW (peak %s kW); the base load of %s kW was %s %% of the mean power.",
		"Der Zähler erfasste %s kWh bei einer mittleren Leistung von %s kW (Spitze %s kW); die Grundlast von %s kW betrug %s %% der mittleren Leistung.",
		value(res, "energy consumption"), value(res, "power.mean"), value(res, "power.maximum"), value(res, "base load"),
		value(res, "base load.relative"))
	if k, ok := res.KPI("energy cost"); ok {
		more := say(" It cost %s "+k.Unit+".", " Sie kostete %s "+k.Unit+".", k.Value)
		in.EN += more.EN
		in.DE += more.DE
	}
	return in, byColor(res, []Text{keepMonitoring},
		[]Text{{
			EN: "A noticeable share of the consumption continues while demand is low: check what runs at night and at weekends.",
			DE: "Ein merklicher Teil des Verbrauchs läuft bei geringem Bedarf weiter: Prüfen Sie, was nachts und am Wochenende läuft.",
		}},
		[]Text{{
			EN: "The base load is high: switch off equipment outside use times, check time programmes, and look for devices that never switch off.",
			DE: "Die Grundlast ist hoch: Schalten Sie Geräte außerhalb der Nutzungszeiten ab, prüfen Sie Zeitprogramme und suchen Sie Verbraucher, die nie abschalten.",
		}})
}

func explainSchedule(res kpi.Result) (Text, []Text) {
	in := say("The component ran for %s h, %s h (%s %%) of it outside the schedule; it was off for %s h while the schedule asked for operation.",
		"Die Komponente lief %s h, davon %s h (%s %%) außerhalb des Zeitplans; während %s h laut Zeitplan war sie außer Betrieb.",
		value(res, "operating time"), value(res, "operation outside schedule"), value(res, "operation outside schedule.relative"),
		value(res, "no operation inside schedule"))
	return in, byColor(res, []Text{keepMonitoring},
		[]Text{{
			EN: "Compare the controller's time programme with the schedule: the component runs somewhat beyond it.",
			DE: "Vergleichen Sie das Zeitprogramm der Regelung mit dem Zeitplan: Die Komponente läuft etwas darüber hinaus.",
		}},
		[]Text{{
			EN: "Much operation falls outside the schedule: set the controller's time programme to the building's use, and check manual overrides and frost protection.",
			DE: "Viel Betrieb liegt außerhalb des Zeitplans: Stellen Sie das Zeitprogramm der Regelung auf die Nutzung ein und prüfen Sie Handeingriffe und Frostschutz.",
		}})
}
