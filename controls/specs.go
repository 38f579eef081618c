package controls

// AlgorithmSpec documents an algorithm for its users (GET
// /v2/controls/algorithms): what it does, the components it fits with
// the pins it writes and reads, and the attributes it reads with their
// formats, the same rules CheckAttributes and a run apply.
type AlgorithmSpec struct {
	Key         string          `json:"key" doc:"the algorithm query parameter of POST /v2/controls/app"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Variations  []string        `json:"variations" doc:"always [default]"`
	Components  []ComponentPins `json:"components" doc:"the components it fits"`
	Attributes  []AttributeSpec `json:"attributes" doc:"the attributes of the component it reads"`
}

// ComponentPins are the pins an algorithm writes and reads on one
// component.
type ComponentPins struct {
	ComponentAlphanumericID string   `json:"component_alphanumeric_id"`
	Output                  []string `json:"output" doc:"the setpoint pin it writes; mapped onto a datapoint with setpoint bounds"`
	Input                   []string `json:"input" doc:"the pins it reads; each must be mapped for a run"`
}

// AttributeSpec is an attribute an algorithm reads.
type AttributeSpec struct {
	Key       string `json:"key" doc:"the attribute definition's key (POST /v2/project/{project_id}/componentInProject/attribute)"`
	ValueType string `json:"value_type" doc:"the catalog's value_type: float, string or json"`
	Required  bool   `json:"required" doc:"true: a run needs it set; false: it has a default"`
	Default   string `json:"default,omitempty" doc:"what an unset optional attribute means"`
	Format    string `json:"format" doc:"what a value must be; checked when it is written (400) and at each run"`
}

// specTable is the algorithms' documentation without their pins, which
// Specs takes from algorithmOf, so the two cannot disagree.
func specTable() []AlgorithmSpec {
	return []AlgorithmSpec{
		{Key: AlgorithmSchedule, Name: "Weekly schedule",
			Description: "Writes the component's setpoint pin from a weekly schedule: the value of the entry the time falls in, " +
				"outside every entry setpoint_schedule_default (or null, clearing the app's slot, when that is unset). " +
				"It writes when it starts and at each boundary of the schedule (one timer per app).",
			Attributes: []AttributeSpec{
				{Key: AttrSchedule, ValueType: "json", Required: true,
					Format: "a JSON list (at most 672) of {\"day\": monday..sunday, \"start\": \"HH:MM\", \"end\": \"HH:MM\", \"value\": number}; " +
						"times from 00:00 to 24:00, start before end; entries must not overlap; no other fields. " +
						"Example: [{\"day\":\"monday\",\"start\":\"08:00\",\"end\":\"18:00\",\"value\":21}]"},
				{Key: AttrScheduleDefault, ValueType: "float", Default: "unset: null (the app's slot is cleared outside the entries)",
					Format: "a finite number, the setpoint outside every entry"},
				{Key: AttrScheduleTimezone, ValueType: "string", Default: "UTC",
					Format: "an IANA time zone name the entries' times are in, such as Europe/Berlin"},
			}},
		{Key: AlgorithmHeatingCurve, Name: "Heating curve",
			Description: "Writes the supply temperature setpoint heating_curve_offset + heating_curve_slope × (20 °C − outdoor), held within " +
				"[heating_curve_min, heating_curve_max], outdoor being the newest value of the datapoint mapped on outside_air_temperature. " +
				"It writes when it starts and whenever the outdoor temperature moves the setpoint by 0.1 K or more.",
			Attributes: []AttributeSpec{
				{Key: AttrCurveSlope, ValueType: "float", Required: true, Format: "a finite number: K of supply temperature per K the outdoor temperature is below 20 °C"},
				{Key: AttrCurveOffset, ValueType: "float", Required: true, Format: "a finite number: °C, the supply setpoint at 20 °C outdoor"},
				{Key: AttrCurveMin, ValueType: "float", Required: true, Format: "a finite number: °C, the lowest supply setpoint; at most heating_curve_max"},
				{Key: AttrCurveMax, ValueType: "float", Required: true, Format: "a finite number: °C, the highest supply setpoint; at least heating_curve_min"},
			}},
	}
}

// Specs documents every algorithm, with the components it fits sorted.
func Specs() []AlgorithmSpec {
	out := specTable()
	for i, s := range out {
		alg, _ := algorithmOf(s.Key)
		s.Variations = []string{"default"}
		s.Components = nil
		for _, c := range alg.fits() {
			cp := ComponentPins{ComponentAlphanumericID: c, Output: []string{alg.output[c]}, Input: []string{}}
			if in, ok := alg.input[c]; ok {
				cp.Input = append(cp.Input, in)
			}
			s.Components = append(s.Components, cp)
		}
		out[i] = s
	}
	return out
}
