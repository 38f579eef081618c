package analytics

import "github.com/openbdp/bdp/analytics/kpi"

func explainDeviation(res kpi.Result) (Text, []Text) {
	in := say("The measured value stayed within tolerance (Y) of its setpoint for %s %% of the analysed time and deviated by more than X for %s %%; the mean deviation was %s K, the largest %s K.",
		"Der Messwert lag %s %% der ausgewerteten Zeit innerhalb der Toleranz (Y) um den Sollwert und wich %s %% der Zeit um mehr als X ab; die mittlere Abweichung betrug %s K, die größte %s K.",
		value(res, "setpoint deviation.smallerY.relative"), value(res, "setpoint deviation.largerX.relative"),
		value(res, "setpoint deviation.mean"), value(res, "setpoint deviation.maximum"))
	return in, byColor(res, []Text{keepMonitoring},
		[]Text{{
			EN: "Check the controller's parameters (gain, integral time): the setpoint is reached, but not closely enough.",
			DE: "Prüfen Sie die Reglerparameter (Verstärkung, Nachstellzeit): Der Sollwert wird erreicht, aber nicht genau genug.",
		}},
		[]Text{{
			EN: "Find out why the loop cannot follow its setpoint: a blocked or undersized valve, a supply temperature that is too low, or a faulty sensor.",
			DE: "Klären Sie, warum der Regelkreis dem Sollwert nicht folgt: ein blockiertes oder zu kleines Ventil, eine zu niedrige Versorgungstemperatur oder ein defekter Fühler.",
		}, {
			EN: "Compare the times of large deviation with the operating messages of the heat or cold supply.",
			DE: "Vergleichen Sie die Zeiten großer Abweichung mit den Betriebsmeldungen der Wärme- oder Kälteversorgung.",
		}})
}

func explainHeatMeter(res kpi.Result) (Text, []Text) {
	in := say("The circuit delivered %s kWh at a mean heat flow of %s kW (largest %s kW); the heat flow was negative for %s %% of the analysed time.",
		"Der Kreis lieferte %s kWh bei einem mittleren Wärmestrom von %s kW (größter %s kW); der Wärmestrom war %s %% der ausgewerteten Zeit negativ.",
		value(res, "Q.total"), value(res, "Q_dot.mean"), value(res, "Q_dot.maximum"), value(res, "Q_dot.negative.relative"))
	return in, byColor(res, []Text{{
		EN: "The data are plausible; compare the heat delivered with a physical heat meter where one exists.",
		DE: "Die Daten sind plausibel; vergleichen Sie die gelieferte Wärme mit einem physischen Wärmemengenzähler, sofern vorhanden.",
	}},
		[]Text{{
			EN: "Check the placement of the flow and return sensors: a negative heat flow now and then points to slow or misplaced sensors.",
			DE: "Prüfen Sie die Lage der Vor- und Rücklauffühler: Ein zeitweise negativer Wärmestrom deutet auf träge oder falsch platzierte Fühler.",
		}},
		[]Text{{
			EN: "The flow and return temperatures are probably swapped in the mapping or at the sensors; check both, and the unit of the volume flow.",
			DE: "Vor- und Rücklauftemperatur sind wahrscheinlich in der Zuordnung oder an den Fühlern vertauscht; prüfen Sie beides sowie die Einheit des Volumenstroms.",
		}})
}

func explainSpread(res kpi.Result) (Text, []Text) {
	in := say("The temperature spread between flow and return was %s K on average (from %s to %s K) and below the minimum for %s %% of the analysed time.",
		"Die Temperaturspreizung zwischen Vor- und Rücklauf betrug im Mittel %s K (von %s bis %s K) und lag %s %% der ausgewerteten Zeit unter dem Minimum.",
		value(res, "temperature spread.average"), value(res, "temperature spread.minimum"), value(res, "temperature spread.maximum"),
		value(res, "temperature spread.below minimum.relative"))
	return in, byColor(res, []Text{keepMonitoring},
		[]Text{{
			EN: "The loop is often underused: lower the pump speed or the pump's pressure setpoint in times of low demand.",
			DE: "Der Kreis ist oft schlecht ausgenutzt: Senken Sie die Pumpendrehzahl oder den Differenzdruck-Sollwert bei geringem Bedarf.",
		}},
		[]Text{{
			EN: "Too much water circulates for the heat delivered: balance the circuit hydraulically, lower the pump's speed, and check for open bypasses.",
			DE: "Für die gelieferte Wärme zirkuliert zu viel Wasser: Gleichen Sie den Kreis hydraulisch ab, senken Sie die Pumpendrehzahl und prüfen Sie offene Überströmungen.",
		}})
}

func explainOutdoor(res kpi.Result) (Text, []Text) {
	in := say("The sensor read within tolerance of the reference for %s %% of the analysed time; it differed by %s K on average and by up to %s K; days influenced by the sun: %s.",
		"Der Fühler lag %s %% der ausgewerteten Zeit innerhalb der Toleranz um die Referenz; er wich im Mittel um %s K und bis zu %s K ab; durch Sonnenstrahlung beeinflusste Tage: %s.",
		value(res, "temperature difference.within tolerance.relative"), value(res, "temperature difference.mean"),
		value(res, "temperature difference.maximum"), value(res, "radiation influenced.total"))
	return in, byColor(res, []Text{keepMonitoring},
		[]Text{{
			EN: "Check the sensor's housing and placement for sun and heat from the building, and its calibration.",
			DE: "Prüfen Sie Gehäuse und Einbauort des Fühlers auf Sonne und Wärme vom Gebäude sowie seine Kalibrierung.",
		}},
		[]Text{{
			EN: "The controllers using this sensor see a wrong outdoor temperature: move the sensor to a shaded north side away from exhaust air, or replace it.",
			DE: "Die Regler, die diesen Fühler nutzen, sehen eine falsche Außentemperatur: Versetzen Sie den Fühler an eine beschattete Nordseite fern von Fortluft oder ersetzen Sie ihn.",
		}})
}

func explainHeatingCurve(res kpi.Result) (Text, []Text) {
	in := say("The supply temperature followed the heating curve within tolerance for %s %% of the analysed time; it was %s K from the curve on average (positive: hotter) and up to %s K away.",
		"Die Vorlauftemperatur folgte der Heizkurve %s %% der ausgewerteten Zeit innerhalb der Toleranz; sie lag im Mittel %s K neben der Kurve (positiv: wärmer) und bis zu %s K entfernt.",
		value(res, "heating curve deviation.within tolerance.relative"), value(res, "heating curve deviation.mean"),
		value(res, "heating curve deviation.maximum"))
	return in, byColor(res, []Text{keepMonitoring},
		[]Text{{
			EN: "Compare the curve in the controller with the reference curve, and check the outdoor sensor.",
			DE: "Vergleichen Sie die Kurve in der Regelung mit der Referenzkurve und prüfen Sie den Außenfühler.",
		}},
		[]Text{{
			EN: "The supply temperature does not follow the heating curve: check the curve's parameters in the controller, the heat generator's capacity and the mixing valve.",
			DE: "Die Vorlauftemperatur folgt der Heizkurve nicht: Prüfen Sie die Kurvenparameter in der Regelung, die Leistung des Wärmeerzeugers und das Mischventil.",
		}})
}

func explainOscillation(res kpi.Result) (Text, []Text) {
	in := say("The control error changed its sign %s times, %s times per hour.",
		"Die Regelabweichung wechselte %s-mal das Vorzeichen, %s-mal je Stunde.",
		value(res, "control error.sign changes"), value(res, "control error.sign changes per hour"))
	if k, ok := res.KPI("control error.amplitude.average"); ok {
		more := say(" A half-wave reached %s K on average.", " Eine Halbwelle erreichte im Mittel %s K.", k.Value)
		in.EN += more.EN
		in.DE += more.DE
	}
	return in, byColor(res, []Text{keepMonitoring},
		[]Text{{
			EN: "The loop swings noticeably: reduce the controller's gain or lengthen its integral time.",
			DE: "Der Regelkreis schwingt merklich: Verringern Sie die Reglerverstärkung oder verlängern Sie die Nachstellzeit.",
		}},
		[]Text{{
			EN: "The loop oscillates, wearing valves and actuators: retune the controller (lower gain, longer integral time) and check the valve's authority and the sensor's position.",
			DE: "Der Regelkreis schwingt und verschleißt Ventile und Antriebe: Stellen Sie den Regler neu ein (geringere Verstärkung, längere Nachstellzeit) und prüfen Sie Ventilautorität und Fühlerposition.",
		}})
}
