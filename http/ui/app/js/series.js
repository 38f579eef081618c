// Reading series for a plot: how finely to ask for them, the requests to
// GET /v2/datapoint/timeseries, and the CSV of what is shown.

import { get } from "./api.js";

// maxPoints is the most points of one series a plot asks for: about one per
// pixel column of a wide screen, and few enough that the answer and the
// drawing stay well under a second.
export const maxPoints = 2000;

// Sample intervals a plot may use, in seconds: round figures, so that the
// intervals fall on full minutes, hours and days.
const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
  21600, 43200, 86400, 172800, 604800, 2592000];

// sampleStep is the shortest interval (seconds) that cuts spanSec into at
// most maxPoints intervals.
export function sampleStep(spanSec) {
  for (const s of steps) if (Math.ceil(spanSec / s) <= maxPoints) return s;
  return Math.ceil(spanSec / maxPoints);
}

// rateString writes seconds the way the API's samplerate wants them.
export function rateString(sec) {
  if (sec % 86400 === 0) return sec / 86400 + "d";
  if (sec % 3600 === 0) return sec / 3600 + "h";
  if (sec % 60 === 0) return sec / 60 + "m";
  return sec + "s";
}

// unitOf is a datapoint's raw unit: its tag units of source system.
export function unitOf(tags) {
  const tag = (tags || []).find((t) => t.key === "units" && t.source === "system");
  return tag ? tag.value : "";
}

// loadSeries reads one datapoint over [startMs, endMs): its observations
// as stored when there are at most maxPoints of them, otherwise the
// aggregation over the interval sampleStep picks. Both requests leave at
// once, so the answer takes as long as the slower of the two, not their
// sum. units, when given, is the unit to convert to (a leaf id of GET
// /v2/labels/definitions); the API converts, or answers 422. Answers {xs
// (seconds), ys, sampled, step, aggregation}.
export async function loadSeries(projectId, dataPointID, startMs, endMs, aggregation, units) {
  const base = { project_id: projectId, dataPointID, short: "true", units: units || undefined };
  const start = new Date(startMs).toISOString();
  const end = new Date(endMs).toISOString();
  const step = sampleStep((endMs - startMs) / 1000);
  // With start but no end the API answers the first max observations from
  // start: one more than maxPoints tells whether the range holds more.
  const rawReq = get("/v2/datapoint/timeseries", { ...base, start, max: maxPoints + 1 });
  const sampledReq = get("/v2/datapoint/timeseries", { ...base, start, end, samplerate: rateString(step), aggregation });
  sampledReq.catch(() => {}); // handled where awaited; unawaited when raw fails
  const raw = await rawReq;
  const endIso = Date.parse(end);
  const inRange = raw.filter((p) => Date.parse(p[0]) < endIso);
  if (raw.length <= maxPoints || inRange.length < raw.length) {
    sampledReq.catch(() => {}); // not needed; its failure must not surface
    return { ...columns(inRange), sampled: false, step: 0, aggregation: "" };
  }
  return { ...columns(await sampledReq), sampled: true, step, aggregation };
}

// The label tree of GET /v2/labels/definitions, read once per page.
let definitions = null;

// compatibleUnits is the group of unit leaves (e.g. temperature) that
// holds unit, matched by id, symbol or name ignoring case and spaces: the
// units it converts into. Answers [] for a unit the tree does not know.
export async function compatibleUnits(unit) {
  if (!unit) return [];
  if (!definitions) {
    definitions = get("/v2/labels/definitions");
    definitions.catch(() => { definitions = null; }); // asked again next time
  }
  const tree = await definitions;
  const norm = (s) => String(s || "").replace(/\s+/g, "").toLowerCase();
  const want = norm(unit);
  for (const group of (tree.units && tree.units.children) || []) {
    const leaves = group.children || [];
    if (leaves.some((u) => [u.id, u.symbol, u.name].some((n) => n && norm(n) === want))) return leaves;
  }
  return [];
}

function columns(pairs) {
  const xs = new Array(pairs.length);
  const ys = new Array(pairs.length);
  for (let i = 0; i < pairs.length; i++) {
    xs[i] = Date.parse(pairs[i][0]) / 1000;
    ys[i] = pairs[i][1];
  }
  return { xs, ys };
}

// align puts series with their own times on one time axis: xs is the
// union of their times, and each series has null where it has no value.
export function align(series) {
  if (series.length === 1) return [series[0].xs, series[0].ys];
  const times = new Set();
  for (const s of series) for (const x of s.xs) times.add(x);
  const xs = Float64Array.from(times).sort();
  const index = new Map();
  xs.forEach((x, i) => index.set(x, i));
  const out = [Array.from(xs)];
  for (const s of series) {
    const ys = new Array(xs.length).fill(null);
    for (let i = 0; i < s.xs.length; i++) ys[index.get(s.xs[i])] = s.ys[i];
    out.push(ys);
  }
  return out;
}

// toCSV writes the rows of data (aligned, times in seconds) whose time is
// within [minSec, maxSec]: a time column in RFC 3339 UTC, then one column
// per series headed by its name and unit. Numbers keep a decimal point
// whatever the UI's language, so that every program reads them.
export function toCSV(data, heads, minSec, maxSec) {
  const lines = [["time", ...heads].map(csvField).join(",")];
  const xs = data[0];
  for (let i = 0; i < xs.length; i++) {
    if (xs[i] < minSec || xs[i] > maxSec) continue;
    const row = [new Date(xs[i] * 1000).toISOString()];
    for (let s = 1; s < data.length; s++) row.push(data[s][i] == null ? "" : String(data[s][i]));
    lines.push(row.map(csvField).join(","));
  }
  return lines.join("\r\n") + "\r\n";
}

function csvField(s) {
  return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}
