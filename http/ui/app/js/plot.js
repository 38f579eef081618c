// The plot panel: a time range, the chosen datapoints drawn with uPlot on
// one time axis (a second y axis for a second unit), zoom by dragging,
// panning by buttons, hover values in the legend, and the CSV of what is
// shown. Each series may be converted to another unit of its quantity
// (the API's units parameter); the axes, legend and CSV name the unit
// converted to.

import { t, addStrings, onLangChange, formatNumber, formatTime, locale } from "./i18n.js";
import { loadSeries, align, toCSV, rateString, compatibleUnits } from "./series.js";
import { projectAccess } from "./access.js";

addStrings({
  en: {
    plotUnits: "Units of the plotted series",
    unitOfSeries: "Unit of {name}",
    asStored: "{unit} (as stored)",
  },
  de: {
    plotUnits: "Einheiten der geplotteten Reihen",
    unitOfSeries: "Einheit von {name}",
    asStored: "{unit} (wie gespeichert)",
  },
});

const hour = 3600 * 1000;
const spans = { "1h": hour, "1d": 24 * hour, "7d": 7 * 24 * hour, "30d": 30 * 24 * hour };
// Line colours, told apart also by people with the common colour-vision
// deficiencies (Okabe and Ito's palette).
const colours = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"];

export function createPlot({ showError, onSeries = () => {} }) {
  const el = {
    panel: document.getElementById("plot-panel"),
    plot: document.getElementById("plot"),
    status: document.getElementById("plot-status"),
    notice: document.getElementById("plot-notice"),
    from: document.getElementById("range-from"),
    to: document.getElementById("range-to"),
    aggregation: document.getElementById("aggregation"),
    csv: document.getElementById("csv"),
    units: document.getElementById("plot-units"),
  };
  const state = {
    projectId: 0,
    series: [], // {id, unit, to}, in the order chosen; to: the unit converted to, "" for none
    range: "1d", // a key of spans, or "custom" with start and end
    start: 0,
    end: 0,
    loaded: null, // {data, heads, plotted, sampled, step, aggregation, ms}
    generation: 0, // the newest load; answers of older ones are dropped
  };
  let chart = null;

  // The range in force as [start, end) in milliseconds.
  function bounds() {
    if (state.range === "custom") return [state.start, state.end];
    const end = Date.now();
    return [end - spans[state.range], end];
  }

  function setRange(kind, start = 0, end = 0) {
    state.range = kind;
    state.start = start;
    state.end = end;
    for (const b of el.panel.querySelectorAll("[data-range]")) b.setAttribute("aria-pressed", String(b.dataset.range === kind));
    const [s, e] = bounds();
    el.from.value = localInput(s);
    el.to.value = localInput(e);
    load();
  }

  // shift moves the range by frac of its length (pan), or scales it about
  // its middle (zoom out).
  function shift(frac, scale = 1) {
    const [s, e] = bounds();
    const mid = (s + e) / 2 + frac * (e - s);
    const half = ((e - s) * scale) / 2;
    setRange("custom", Math.round(mid - half), Math.round(mid + half));
  }

  async function load() {
    const gen = ++state.generation;
    el.csv.disabled = true;
    el.notice.textContent = "";
    if (!state.projectId || state.series.length === 0) {
      destroy();
      el.plot.dataset.state = "empty";
      el.status.textContent = t("plotEmpty");
      return;
    }
    const [start, end] = bounds();
    const t0 = performance.now();
    el.plot.dataset.state = "loading";
    el.plot.setAttribute("aria-busy", "true");
    el.status.textContent = t("plotLoading");

    // At most two units: the first two distinct ones get an axis each.
    const units = [];
    const plotted = [];
    for (const s of state.series) {
      if (!units.includes(shown(s))) {
        if (units.length === 2) {
          el.notice.textContent = t("tooManyUnits", { name: s.id, unit: shown(s) || t("noUnit") });
          continue;
        }
        units.push(shown(s));
      }
      plotted.push(s);
    }
    const agg = el.aggregation.value;
    let answers;
    try {
      answers = await Promise.all(plotted.map((s) => loadSeries(state.projectId, s.id, start, end, agg, s.to)));
    } catch (err) {
      if (gen !== state.generation) return;
      el.plot.dataset.state = "error";
      el.plot.removeAttribute("aria-busy");
      el.status.textContent = "";
      showError(err);
      return;
    }
    if (gen !== state.generation) return; // a newer load started meanwhile
    const data = align(answers);
    const sampled = answers.find((a) => a.sampled);
    state.loaded = {
      data,
      plotted,
      heads: plotted.map((s) => (shown(s) ? `${s.id} (${shown(s)})` : s.id)),
      sampled: Boolean(sampled),
      step: sampled ? sampled.step : 0,
      aggregation: sampled ? sampled.aggregation : "",
      start,
      end,
      t0, // uPlot draws in a microtask: its draw hook finishes the load
    };
    draw(units, start / 1000, end / 1000);
  }

  // drawn runs when uPlot has drawn a load's data for the first time.
  function drawn() {
    const l = state.loaded;
    l.ms = Math.round(performance.now() - l.t0);
    l.t0 = 0;
    el.plot.removeAttribute("aria-busy");
    // What the tests read: the state, the time to draw and the points of
    // each series (those with a value).
    el.plot.dataset.state = "ready";
    el.plot.dataset.drawMs = String(l.ms);
    el.plot.dataset.points = l.data.slice(1).map((ys) => ys.filter((y) => y != null).length).join(",");
    el.plot.dataset.axes = String(unitsOf(l.plotted).length);
    el.plot.dataset.axisUnits = unitsOf(l.plotted).join(","); // the axes' labels, drawn on the canvas
    el.csv.disabled = l.data[0].length === 0;
    describe();
  }

  function draw(units, start, end) {
    destroy();
    const { data, plotted } = state.loaded;
    const scaleOf = (unit) => (units.indexOf(unit) === 1 ? "y2" : "y");
    const axes = [
      { stroke: "#333", grid: { stroke: "#e5e5e5" } },
      { scale: "y", label: units[0] || t("noUnit"), stroke: "#333", grid: { stroke: "#e5e5e5" }, values: axisValues },
    ];
    if (units.length === 2) {
      axes.push({ scale: "y2", side: 1, label: units[1] || t("noUnit"), stroke: "#333", grid: { show: false }, values: axisValues });
    }
    const opts = {
      width: Math.max(300, el.plot.clientWidth),
      height: 360,
      tzDate: (ts) => new Date(ts * 1000),
      fmtDate: (tpl) => (d) => dateFormat(tpl).format(d),
      scales: { x: { time: true } },
      axes,
      cursor: {
        drag: { x: true, y: false, setScale: true },
        // Series of their own times have gaps on the shared axis: the
        // legend shows each one's value nearest the cursor, not a gap.
        dataIdx: (u, sidx, idx) => nearestValue(u.data[sidx], idx),
      },
      legend: { live: true },
      series: [
        { label: t("time"), value: (u, v) => (v == null ? "–" : formatTime(v * 1000)) },
        ...plotted.map((s, i) => ({
          label: shown(s) ? `${s.id} (${shown(s)})` : s.id,
          scale: scaleOf(shown(s)),
          stroke: colours[i % colours.length],
          width: 1.5,
          spanGaps: true,
          points: { show: false },
          value: (u, v) => (v == null ? "–" : formatNumber(v) + (shown(s) ? " " + shown(s) : "")),
        })),
      ],
      hooks: {
        draw: [() => {
          if (state.loaded && state.loaded.t0) drawn();
          else if (state.loaded && state.loaded.live) liveDrawn();
        }],
        // A drag zooms in on the points loaded; when they were sampled, the
        // range dragged over is loaded anew, finer.
        setSelect: [(u) => {
          if (u.select.width < 2) return;
          const min = u.posToVal(u.select.left, "x");
          const max = u.posToVal(u.select.left + u.select.width, "x");
          if (state.loaded && state.loaded.sampled) {
            queueMicrotask(() => setRange("custom", Math.round(min * 1000), Math.round(max * 1000)));
          } else {
            state.range = "custom";
            state.start = Math.round(min * 1000);
            state.end = Math.round(max * 1000);
            el.from.value = localInput(state.start);
            el.to.value = localInput(state.end);
            for (const b of el.panel.querySelectorAll("[data-range]")) b.setAttribute("aria-pressed", "false");
            describe();
          }
        }],
      },
    };
    chart = new uPlot(opts, data, el.plot);
    // The whole range asked for, not just the span of the data.
    chart.setScale("x", { min: start, max: end });
  }

  function destroy() {
    if (chart) chart.destroy();
    chart = null;
  }

  // addLive puts a value that live.js received into the plot: at its
  // time among the loaded points (sampled plots get it as one more
  // point), the range sliding along when it is one of the last-N ranges.
  function addLive(id, ms, value, receivedAt) {
    const l = state.loaded;
    const idx = l && chart && !l.t0 ? l.plotted.findIndex((s) => s.id === id) : -1;
    if (idx < 0) return;
    if (state.range === "custom" && (ms < state.start || ms > state.end)) return;
    if (l.plotted[idx].to) {
      // A live value is in the stored unit: a converted series is read
      // again (the API converts), once for a burst of values.
      clearTimeout(state.reload);
      state.reload = setTimeout(load, 500);
      return;
    }
    const x = ms / 1000;
    const xs = l.data[0];
    let i = xs.length;
    while (i > 0 && xs[i - 1] > x) i--;
    if (i > 0 && xs[i - 1] === x) l.data[idx + 1][i - 1] = value;
    else {
      xs.splice(i, 0, x);
      for (let s = 1; s < l.data.length; s++) l.data[s].splice(i, 0, s === idx + 1 ? value : null);
    }
    l.live = { id, value, receivedAt };
    const [start, end] = bounds();
    if (state.range !== "custom") {
      l.start = start;
      l.end = end;
    }
    chart.setData(l.data);
    chart.setScale("x", { min: start / 1000, max: end / 1000 });
  }

  // liveDrawn notes when a live value was drawn, for the tests (latency
  // from storage to screen) and the status line.
  function liveDrawn() {
    const l = state.loaded;
    const v = l.live;
    l.live = null;
    const now = Date.now();
    el.plot.dataset.points = l.data.slice(1).map((ys) => ys.filter((y) => y != null).length).join(",");
    el.plot.dataset.liveDrawn = JSON.stringify({ id: v.id, value: v.value, at: now, ms: now - v.receivedAt });
    el.csv.disabled = false;
    describe();
  }

  // renderUnits writes a unit choice for each series whose unit the label
  // tree knows: its own unit (as stored) and the others of its quantity.
  // Users whose roles do not grant the label tree get no choice.
  async function renderUnits() {
    const series = state.series.slice();
    let groups = series.map(() => []);
    try {
      const access = series.length > 0 ? await projectAccess(state.projectId) : null;
      if (access && access.can("GET", "/v2/labels/definitions")) groups = await Promise.all(series.map((s) => compatibleUnits(s.unit)));
    } catch (err) {
      showError(err);
      return;
    }
    if (series.some((s, i) => state.series[i] !== s) || series.length !== state.series.length) return; // changed meanwhile
    const labels = [];
    series.forEach((s, i) => {
      const others = groups[i].filter((u) => u.id !== s.unit);
      if (others.length === 0) return;
      const select = document.createElement("select");
      select.dataset.dp = s.id;
      select.append(new Option(t("asStored", { unit: s.unit }), ""));
      for (const u of others) select.append(new Option(u.symbol ? `${u.name} (${u.symbol})` : u.name, u.id));
      select.value = s.to;
      select.addEventListener("change", () => {
        s.to = select.value;
        load();
      });
      const label = document.createElement("label");
      const text = document.createElement("span");
      text.textContent = t("unitOfSeries", { name: s.id });
      label.append(text, " ", select);
      labels.push(label);
    });
    el.units.replaceChildren(...labels);
    el.units.hidden = labels.length === 0;
  }

  // describe writes the status line and the plot's label for screen
  // readers, in the language in force.
  function describe() {
    const l = state.loaded;
    if (!l) return;
    const n = Math.max(0, ...l.data.slice(1).map((ys) => ys.filter((y) => y != null).length));
    const aggName = { mean: t("aggMean"), min: t("aggMin"), max: t("aggMax") }[l.aggregation] || l.aggregation;
    el.status.textContent = l.data[0].length === 0 ? t("plotNoData")
      : l.sampled ? t("plotSampled", { n, agg: aggName, rate: rateString(l.step), ms: l.ms })
        : t("plotRaw", { n, ms: l.ms });
    const [min, max] = shownRange();
    el.plot.setAttribute("aria-label", t("plotLabel", {
      names: l.plotted.map((s) => s.id).join(", "),
      from: formatTime(min * 1000),
      to: formatTime(max * 1000),
    }));
  }

  // shownRange is the x range on screen, in seconds.
  function shownRange() {
    if (chart) return [chart.scales.x.min, chart.scales.x.max];
    return [state.loaded.start / 1000, state.loaded.end / 1000];
  }

  function downloadCSV() {
    const l = state.loaded;
    if (!l) return;
    const [min, max] = shownRange();
    const csv = toCSV(l.data, l.heads, min, max);
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([csv], { type: "text/csv;charset=utf-8" }));
    const stamp = (s) => new Date(s * 1000).toISOString().slice(0, 16).replace(/[-:]/g, "");
    a.download = `bdp-${state.projectId}-${stamp(min)}-${stamp(max)}.csv`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  }

  // Wiring of the controls.
  for (const b of el.panel.querySelectorAll("[data-range]")) b.addEventListener("click", () => setRange(b.dataset.range));
  document.getElementById("range-apply").addEventListener("click", () => {
    const s = Date.parse(el.from.value);
    const e = Date.parse(el.to.value);
    if (!(s < e)) {
      el.notice.textContent = t("badRange");
      return;
    }
    setRange("custom", s, e);
  });
  document.getElementById("pan-left").addEventListener("click", () => shift(-0.5));
  document.getElementById("pan-right").addEventListener("click", () => shift(0.5));
  document.getElementById("zoom-out").addEventListener("click", () => shift(0, 2));
  el.aggregation.addEventListener("change", () => load());
  el.csv.addEventListener("click", downloadCSV);
  new ResizeObserver(() => {
    if (chart && el.plot.clientWidth > 0) chart.setSize({ width: Math.max(300, el.plot.clientWidth), height: 360 });
  }).observe(el.plot);
  onLangChange(() => {
    // Axis dates, legend values and the status line are in the language.
    renderUnits();
    if (state.loaded && chart) {
      const [min, max] = shownRange();
      draw(unitsOf(state.loaded.plotted), min, max);
      chart.setScale("x", { min, max });
    }
    if (state.loaded) describe();
    else if (el.plot.dataset.state === "empty") el.status.textContent = t("plotEmpty");
  });

  return {
    // show starts over for a project.
    show(projectId) {
      state.projectId = projectId;
      state.series = [];
      state.loaded = null;
      setRange(state.range, state.start, state.end);
      onSeries([]);
      renderUnits();
    },
    toggle(id, unit, on) {
      state.series = state.series.filter((s) => s.id !== id);
      if (on) state.series.push({ id, unit, to: "" });
      onSeries(state.series.map((s) => s.id));
      load();
      renderUnits();
    },
    live: addLive,
    selected: () => state.series.map((s) => s.id),
  };
}

// nearestValue is the index of the value nearest idx in ys that is not
// null (idx itself when there is none).
function nearestValue(ys, idx) {
  if (ys[idx] != null) return idx;
  for (let d = 1; d < ys.length; d++) {
    if (idx - d >= 0 && ys[idx - d] != null) return idx - d;
    if (idx + d < ys.length && ys[idx + d] != null) return idx + d;
    if (idx - d < 0 && idx + d >= ys.length) break;
  }
  return idx;
}

function unitsOf(plotted) {
  const units = [];
  for (const s of plotted) if (!units.includes(shown(s))) units.push(shown(s));
  return units;
}

// shown is the unit of a series' values as plotted: the one converted to,
// else its own.
function shown(s) {
  return s.to || s.unit;
}

function axisValues(u, vals) {
  return vals.map((v) => formatNumber(v));
}

// dateFormat turns one of uPlot's axis templates ("{h}:{mm}{aa}\n{M}/{D}")
// into a formatter in the UI's language: the fields of each line pick the
// parts Intl writes, in the order and style of the locale.
function dateFormat(tpl) {
  const lines = tpl.split("\n").map((line) => {
    const o = {};
    if (/\{YY(YY)?\}/.test(line)) o.year = "numeric";
    if (/\{MMM+\}/.test(line)) o.month = "short";
    else if (/\{MM?\}/.test(line)) o.month = "numeric";
    if (/\{DD?\}/.test(line)) o.day = "numeric";
    if (/\{[hH]+\}/.test(line)) o.hour = "2-digit";
    if (/\{mm\}/.test(line)) o.minute = "2-digit";
    if (/\{ss\}/.test(line)) o.second = "2-digit";
    if (/\{fff\}/.test(line)) o.fractionalSecondDigits = 3;
    return Object.keys(o).length ? new Intl.DateTimeFormat(locale(), o) : null;
  });
  return { format: (d) => lines.map((f) => (f ? f.format(d) : "")).join("\n") };
}

// localInput writes ms as a datetime-local input's value.
function localInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 16);
}
