package analytics

import "github.com/openbdp/bdp/analytics/kpi"

func explainDeviation(res kpi.Result) (Text, []Text) {
	in := Text{
		EN: "The measured value stayed within ±" + devY + " of its setpoint for {setpoint deviation.smallerY.relative} of the analysed time " +
			"and deviated by more than " + devX + " for {setpoint deviation.largerX.relative}; " +
			"the mean deviation was {setpoint deviation.mean}, the largest {setpoint deviation.maximum}.",
		DE: "Der Messwert lag {setpoint deviation.smallerY.relative} der ausgewerteten Zeit innerhalb ±" + devY + " um den Sollwert " +
			"und wich {setpoint deviation.largerX.relative} der Zeit um mehr als " + devX + " ab; " +
			"die mittlere Abweichung betrug {setpoint deviation.mean}, die größte {setpoint deviation.maximum}.",
	}
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
	in := Text{
		EN: "The circuit delivered {Q.total} at a mean heat flow of {Q_dot.mean} (largest {Q_dot.maximum}); " +
			"the heat flow was negative for {Q_dot.negative.relative} of the analysed time.",
		DE: "Der Kreis lieferte {Q.total} bei einem mittleren Wärmestrom von {Q_dot.mean} (größter {Q_dot.maximum}); " +
			"der Wärmestrom war {Q_dot.negative.relative} der ausgewerteten Zeit negativ.",
	}
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
	in := Text{
		EN: "The temperature spread between flow and return was {temperature spread.average} on average " +
			"(from {temperature spread.minimum} to {temperature spread.maximum}) and below the minimum of " + minSpread +
			" for {temperature spread.below minimum.relative} of the analysed time.",
		DE: "Die Temperaturspreizung zwischen Vor- und Rücklauf betrug im Mittel {temperature spread.average} " +
			"(von {temperature spread.minimum} bis {temperature spread.maximum}) und lag {temperature spread.below minimum.relative} " +
			"der ausgewerteten Zeit unter der Mindestspreizung von " + minSpread + ".",
	}
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
	in := Text{
		EN: "The sensor read within ±" + outdoorTol + " of the reference for {temperature difference.within tolerance.relative} of the analysed time; " +
			"it differed by {temperature difference.mean} on average and by up to {temperature difference.maximum}; " +
			"days influenced by the sun: {#radiation influenced.total}.",
		DE: "Der Fühler lag {temperature difference.within tolerance.relative} der ausgewerteten Zeit innerhalb ±" + outdoorTol + " um die Referenz; " +
			"er wich im Mittel um {temperature difference.mean} und bis zu {temperature difference.maximum} ab; " +
			"durch Sonnenstrahlung beeinflusste Tage: {#radiation influenced.total}.",
	}
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
	in := Text{
		EN: "The supply temperature followed the heating curve within ±" + curveTol + " for {heating curve deviation.within tolerance.relative} of the analysed time; " +
			"it was {heating curve deviation.mean} from the curve on average (positive: hotter) and up to {heating curve deviation.maximum} away.",
		DE: "Die Vorlauftemperatur folgte der Heizkurve {heating curve deviation.within tolerance.relative} der ausgewerteten Zeit innerhalb ±" + curveTol + "; " +
			"sie lag im Mittel {heating curve deviation.mean} neben der Kurve (positiv: wärmer) und bis zu {heating curve deviation.maximum} entfernt.",
	}
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
	in := Text{
		EN: "The control error changed its sign {#control error.sign changes} times, {#control error.sign changes per hour} times per hour.",
		DE: "Die Regelabweichung wechselte {#control error.sign changes}-mal das Vorzeichen, {#control error.sign changes per hour}-mal je Stunde.",
	}
	in = also(in, res, "control error.amplitude.average", Text{
		EN: " A half-wave reached {control error.amplitude.average} on average.",
		DE: " Eine Halbwelle erreichte im Mittel {control error.amplitude.average}.",
	})
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
