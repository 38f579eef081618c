package analytics

import "github.com/openbdp/bdp/analytics/kpi"

// The interpretation and recommendations of each function's result with
// data. The interpretation states the key figures through marks
// (figures.go), so that it says each in the unit and rounding the KPI list
// shows; the recommendations fit the signal color (kpi's thresholds,
// documented with each kernel).

// also appends more to in when res reports the KPI id: a text may state
// only the figures the run computed.
func also(in Text, res kpi.Result, id string, more Text) Text {
	if _, ok := res.KPI(id); ok {
		in.EN += more.EN
		in.DE += more.DE
	}
	return in
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
	in := Text{
		EN: "The air was good (IDA 1) for {co2 duration.IDA1.relative} of the time with data and poor (IDA 4) for {co2 duration.IDA4.relative}; " +
			"the mean CO2 concentration was {co2.mean}, the highest {co2.maximum}.",
		DE: "Die Luft war {co2 duration.IDA1.relative} der Zeit mit Daten gut (IDA 1) und {co2 duration.IDA4.relative} schlecht (IDA 4); " +
			"die mittlere CO2-Konzentration betrug {co2.mean}, die höchste {co2.maximum}.",
	}
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
	in := Text{
		EN: "The component had {#starts} starts and ran for {operating time} ({operating time.relative} of the time with data); " +
			"{#closed operating cycles} operating cycles closed.",
		DE: "Die Komponente hatte {#starts} Starts und lief {operating time} ({operating time.relative} der Zeit mit Daten); " +
			"{#closed operating cycles} Betriebszyklen wurden abgeschlossen.",
	}
	// A cycle runs from one start to the next: its time is what the
	// cycle time KPIs state, of which the duty time is the part on.
	in = also(in, res, "cycle times.median", Text{
		EN: " In the median a cycle took {cycle times.median} from start to start, and the component ran for {duty times.median} of a cycle.",
		DE: " Im Median dauerte ein Zyklus von Start zu Start {cycle times.median}, und die Komponente lief {duty times.median} je Zyklus.",
	})
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
	in := Text{
		EN: "The operative temperature was in comfort category I for {thermal comfort.categoryI.relative} of the time with data, " +
			"in category II for {thermal comfort.categoryII.relative} and outside category III for {thermal comfort.categoryIV.relative}; " +
			"it averaged {operative temperature.mean} (from {operative temperature.minimum} to {operative temperature.maximum}).",
		DE: "Die operative Temperatur lag {thermal comfort.categoryI.relative} der Zeit mit Daten in der Komfortkategorie I, " +
			"{thermal comfort.categoryII.relative} in der Kategorie II und {thermal comfort.categoryIV.relative} außerhalb der Kategorie III; " +
			"sie betrug im Mittel {operative temperature.mean} (von {operative temperature.minimum} bis {operative temperature.maximum}).",
	}
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
	in := Text{
		EN: "The meter recorded {energy consumption} at a mean power of {power.mean} (peak {power.maximum}); " +
			"the base load of {base load} was {base load.relative} of the mean power.",
		DE: "Der Zähler erfasste {energy consumption} bei einer mittleren Leistung von {power.mean} (Spitze {power.maximum}); " +
			"die Grundlast von {base load} betrug {base load.relative} der mittleren Leistung.",
	}
	in = also(in, res, "energy cost", Text{EN: " It cost {energy cost}.", DE: " Sie kostete {energy cost}."})
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
	in := Text{
		EN: "The component ran for {operating time}, {operation outside schedule} ({operation outside schedule.relative}) of it outside the schedule; " +
			"it was off for {no operation inside schedule} while the schedule asked for operation.",
		DE: "Die Komponente lief {operating time}, davon {operation outside schedule} ({operation outside schedule.relative}) außerhalb des Zeitplans; " +
			"während {no operation inside schedule} laut Zeitplan war sie außer Betrieb.",
	}
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
