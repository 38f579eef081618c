package units

// This file is the data: every dimension and every unit the package knows.
// Adding a unit is adding one line to the units table below; the lookup,
// conversion, system choice and label tree all read from it.

// Dimension is the physical quantity a unit measures. Only units of the same
// dimension convert into each other.
type Dimension string

// The dimensions, in the order the label tree lists them.
const (
	Temperature     Dimension = "temperature"
	Pressure        Dimension = "pressure"
	Energy          Dimension = "energy"
	Power           Dimension = "power"
	VolumeFlow      Dimension = "volume_flow"
	Volume          Dimension = "volume"
	Area            Dimension = "area"
	Length          Dimension = "length"
	Speed           Dimension = "speed"
	Illuminance     Dimension = "illuminance"
	Irradiance      Dimension = "irradiance"
	EnergyIntensity Dimension = "energy_intensity"
	Ratio           Dimension = "ratio"
	Concentration   Dimension = "concentration"
	Time            Dimension = "time"
	Voltage         Dimension = "voltage"
	Current         Dimension = "current"
	Frequency       Dimension = "frequency"
)

// The units systems (GET /v2/labels/systems). A unit belongs to SI, to
// Imperial, or to both (System ""), such as percent or seconds.
// "SI" here means metric building practice: kWh, bar and l/s count as SI.
const (
	SI       = "SI"
	Imperial = "imperial"
)

// dimensionInfo is one row of the dimensions table: its display name and the
// unit ForSystem picks in each units system. A dimension without a preferred
// unit for a system (ratio, time, ...) keeps the source unit.
type dimensionInfo struct {
	id        Dimension
	name      string
	preferred map[string]string // units system id -> unit id
}

func prefer(si, imperial string) map[string]string {
	return map[string]string{SI: si, Imperial: imperial}
}

var dimensions = []dimensionInfo{
	{Temperature, "Temperature", prefer("celsius", "fahrenheit")},
	{Pressure, "Pressure", prefer("Pa", "psi")},
	{Energy, "Energy", prefer("kWh", "BTU")},
	{Power, "Power", prefer("kW", "BTU/h")},
	{VolumeFlow, "Volume flow", prefer("m3/h", "cfm")},
	{Volume, "Volume", prefer("m3", "ft3")},
	{Area, "Area", prefer("m2", "ft2")},
	{Length, "Length", prefer("m", "ft")},
	{Speed, "Speed", prefer("m/s", "ft/min")},
	{Illuminance, "Illuminance", prefer("lx", "fc")},
	{Irradiance, "Irradiance", prefer("W/m2", "BTU/(h*ft2)")},
	{EnergyIntensity, "Energy use intensity", prefer("kWh/m2", "kBTU/ft2")},
	{Ratio, "Ratio", nil},
	{Concentration, "Concentration", nil},
	{Time, "Duration", nil},
	{Voltage, "Voltage", nil},
	{Current, "Electric current", nil},
	{Frequency, "Frequency", nil},
}

// Exact defining values (NIST SP 811) the table builds on.
const (
	foot    = 0.3048                   // m
	inch    = 0.0254                   // m
	ft2     = foot * foot              // m²
	ft3     = foot * foot * foot       // m³
	usGal   = 231 * inch * inch * inch // m³ (3.785411784 l)
	btu     = 1055.05585262            // J, International Table BTU
	hour    = 3600                     // s
	lbf     = 4.4482216152605          // N, pound-force
	gravity = 9.80665                  // m/s², standard gravity
)

// row is one unit. Conversion to the dimension's base unit (the row with
// factor 1 and offset 0) is
//
//	base = (value + offset) * factor
//
// so factor is the size of the unit in base units and offset moves the zero
// point (temperatures only: °C = (°F − 32) × 5/9). aliases is a space-separated
// list of further accepted spellings; the id and the symbol are accepted too.
type row struct {
	id, name, symbol string
	dim              Dimension
	factor, offset   float64
	system           string
	aliases          string
}

// units is the unit table. Bare "C" and "F" are deliberately not aliases:
// in SI they are coulomb and farad, and a wrong silent conversion is worse
// than a refused one.
var units = []row{
	// Temperature; base celsius.
	{"celsius", "degree Celsius", "°C", Temperature, 1, 0, SI, "degC ℃ Cel degrees-celsius degree_celsius"},
	{"fahrenheit", "degree Fahrenheit", "°F", Temperature, 5.0 / 9, -32, Imperial, "degF ℉ [degF] degrees-fahrenheit degree_fahrenheit"},
	{"kelvin", "kelvin", "K", Temperature, 1, -273.15, SI, "degK degrees-kelvin"},

	// Pressure; base pascal.
	{"Pa", "pascal", "Pa", Pressure, 1, 0, SI, "pascal"},
	{"hPa", "hectopascal", "hPa", Pressure, 100, 0, SI, ""},
	{"kPa", "kilopascal", "kPa", Pressure, 1e3, 0, SI, ""},
	{"mbar", "millibar", "mbar", Pressure, 100, 0, SI, ""},
	{"bar", "bar", "bar", Pressure, 1e5, 0, SI, ""},
	{"psi", "pound-force per square inch", "psi", Pressure, lbf / (inch * inch), 0, Imperial, "lbf/in2"},
	{"inH2O", "inch of water column", "inH₂O", Pressure, inch * 1000 * gravity, 0, Imperial, "inWC in_wc"},

	// Energy; base joule.
	{"J", "joule", "J", Energy, 1, 0, SI, "joule"},
	{"kJ", "kilojoule", "kJ", Energy, 1e3, 0, SI, ""},
	{"MJ", "megajoule", "MJ", Energy, 1e6, 0, SI, ""},
	{"GJ", "gigajoule", "GJ", Energy, 1e9, 0, SI, ""},
	{"Wh", "watt hour", "Wh", Energy, hour, 0, SI, ""},
	{"kWh", "kilowatt hour", "kWh", Energy, 1e3 * hour, 0, SI, ""},
	{"MWh", "megawatt hour", "MWh", Energy, 1e6 * hour, 0, SI, ""},
	{"BTU", "British thermal unit (IT)", "BTU", Energy, btu, 0, Imperial, "BTU_IT"},
	{"kBTU", "thousand BTU", "kBTU", Energy, 1e3 * btu, 0, Imperial, ""},
	{"MMBTU", "million BTU", "MMBTU", Energy, 1e6 * btu, 0, Imperial, ""},
	{"therm", "therm (100 000 BTU)", "thm", Energy, 1e5 * btu, 0, Imperial, ""},

	// Power; base watt.
	{"W", "watt", "W", Power, 1, 0, SI, "watt"},
	{"kW", "kilowatt", "kW", Power, 1e3, 0, SI, ""},
	{"MW", "megawatt", "MW", Power, 1e6, 0, SI, ""},
	{"BTU/h", "BTU per hour", "BTU/h", Power, btu / hour, 0, Imperial, "BTU/hr BTUH"},
	{"kBTU/h", "thousand BTU per hour", "kBTU/h", Power, 1e3 * btu / hour, 0, Imperial, "MBH kBTU/hr"},
	{"TR", "ton of refrigeration (12 000 BTU/h)", "TR", Power, 12000 * btu / hour, 0, Imperial, "RT ton_refrigeration"},
	{"hp", "horsepower (mechanical)", "hp", Power, 550 * foot * lbf, 0, Imperial, "horsepower"},

	// Volume flow; base cubic metre per second.
	{"m3/s", "cubic metre per second", "m³/s", VolumeFlow, 1, 0, SI, ""},
	{"m3/h", "cubic metre per hour", "m³/h", VolumeFlow, 1.0 / hour, 0, SI, "cmh"},
	{"l/s", "litre per second", "l/s", VolumeFlow, 1e-3, 0, SI, "lps"},
	{"l/min", "litre per minute", "l/min", VolumeFlow, 1e-3 / 60, 0, SI, "lpm"},
	{"cfm", "cubic foot per minute", "cfm", VolumeFlow, ft3 / 60, 0, Imperial, "ft3/min"},
	{"gpm", "US gallon per minute", "gpm", VolumeFlow, usGal / 60, 0, Imperial, "gal/min"},

	// Volume; base cubic metre.
	{"m3", "cubic metre", "m³", Volume, 1, 0, SI, ""},
	{"l", "litre", "l", Volume, 1e-3, 0, SI, "litre liter"},
	{"ft3", "cubic foot", "ft³", Volume, ft3, 0, Imperial, "cuft"},
	{"gal", "US gallon", "gal", Volume, usGal, 0, Imperial, "gallon USgal gal_us"},

	// Area; base square metre.
	{"m2", "square metre", "m²", Area, 1, 0, SI, "sqm"},
	{"ft2", "square foot", "ft²", Area, ft2, 0, Imperial, "sqft sf"},

	// Length; base metre.
	{"m", "metre", "m", Length, 1, 0, SI, "metre meter"},
	{"km", "kilometre", "km", Length, 1e3, 0, SI, ""},
	{"cm", "centimetre", "cm", Length, 1e-2, 0, SI, ""},
	{"mm", "millimetre", "mm", Length, 1e-3, 0, SI, ""},
	{"ft", "foot", "ft", Length, foot, 0, Imperial, "foot feet"},
	{"in", "inch", "in", Length, inch, 0, Imperial, "inch"},

	// Speed; base metre per second.
	{"m/s", "metre per second", "m/s", Speed, 1, 0, SI, "mps"},
	{"km/h", "kilometre per hour", "km/h", Speed, 1e3 / hour, 0, SI, "kph kmh"},
	{"ft/min", "foot per minute", "ft/min", Speed, foot / 60, 0, Imperial, "fpm"},
	{"mph", "mile per hour", "mph", Speed, 5280 * foot / hour, 0, Imperial, "mi/h"},

	// Illuminance; base lux.
	{"lx", "lux", "lx", Illuminance, 1, 0, SI, "lux"},
	{"fc", "foot-candle", "fc", Illuminance, 1 / ft2, 0, Imperial, "footcandle"},

	// Irradiance (solar); base watt per square metre.
	{"W/m2", "watt per square metre", "W/m²", Irradiance, 1, 0, SI, ""},
	{"BTU/(h*ft2)", "BTU per hour and square foot", "BTU/(h·ft²)", Irradiance, btu / hour / ft2, 0, Imperial, "BTU/h/ft2 BTU/hft2"},

	// Energy use intensity (annual energy per floor area); base kWh/m².
	{"kWh/m2", "kilowatt hour per square metre", "kWh/m²", EnergyIntensity, 1, 0, SI, ""},
	{"kBTU/ft2", "thousand BTU per square foot", "kBTU/ft²", EnergyIntensity, btu / ft2 / hour, 0, Imperial, ""},

	// Ratio; base fraction 0..1. "count" is the name api.md 2.11 uses for a
	// relative humidity given as a fraction.
	{"ratio", "ratio (fraction 0..1)", "", Ratio, 1, 0, "", "count fraction"},
	{"percent", "percent", "%", Ratio, 0.01, 0, "", "pct %RH"},

	// Concentration (CO₂, VOC); base parts per million.
	{"ppm", "parts per million", "ppm", Concentration, 1, 0, "", ""},
	{"ppb", "parts per billion", "ppb", Concentration, 1e-3, 0, "", ""},

	// Duration; base second.
	{"s", "second", "s", Time, 1, 0, "", "sec second seconds"},
	{"min", "minute", "min", Time, 60, 0, "", "minute minutes"},
	{"h", "hour", "h", Time, hour, 0, "", "hr hour hours"},
	{"d", "day", "d", Time, 24 * hour, 0, "", "day days"},

	// Electrical.
	{"V", "volt", "V", Voltage, 1, 0, "", "volt"},
	{"kV", "kilovolt", "kV", Voltage, 1e3, 0, "", ""},
	{"A", "ampere", "A", Current, 1, 0, "", "amp ampere"},
	{"mA", "milliampere", "mA", Current, 1e-3, 0, "", ""},
	{"Hz", "hertz", "Hz", Frequency, 1, 0, "", "hertz"},
}
