// A small plot of a few series over a range: a virtual datapoint's output
// (left axis) beside its sources (right axis). Reads as the main plot
// does (series.js), draws with uPlot; the container's data-state and
// data-points say what was drawn (ready, and the points per series).

import "./opsstrings.js";
import { loadSeries, align } from "./series.js";
import { t, formatNumber, formatTime } from "./i18n.js";

const colours = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"];

export function createMiniPlot(container) {
  let chart = null;
  let generation = 0;

  // draw plots left (ids on the left axis) and right over [startMs, endMs).
  async function draw(projectId, left, right, startMs, endMs) {
    const gen = ++generation;
    container.dataset.state = "loading";
    container.setAttribute("aria-busy", "true");
    const ids = [...left, ...right];
    let answers;
    try {
      // A datapoint without data yet (an output before its first value)
      // is an empty series.
      answers = await Promise.all(ids.map((id) => loadSeries(projectId, id, startMs, endMs, "mean")
        .catch((err) => (err.status === 404 ? { xs: [], ys: [] } : Promise.reject(err)))));
    } catch (err) {
      if (gen === generation) {
        container.dataset.state = "error";
        container.removeAttribute("aria-busy");
      }
      throw err;
    }
    if (gen !== generation) return;
    const data = align(answers);
    if (chart) chart.destroy();
    const axes = [
      { stroke: "#333", grid: { stroke: "#e5e5e5" } },
      { scale: "y", label: t("vdpOutput"), stroke: "#333", grid: { stroke: "#e5e5e5" }, values: (u, vs) => vs.map(formatNumber) },
    ];
    if (right.length) axes.push({ scale: "y2", side: 1, label: t("vdpSources"), stroke: "#333", grid: { show: false }, values: (u, vs) => vs.map(formatNumber) });
    chart = new uPlot({
      width: Math.max(300, container.clientWidth || 600),
      height: 260,
      scales: { x: { time: true } },
      axes,
      legend: { live: true },
      series: [
        { label: t("time"), value: (u, v) => (v == null ? "–" : formatTime(v * 1000)) },
        ...ids.map((id, i) => ({
          label: id,
          scale: i < left.length ? "y" : "y2",
          stroke: colours[i % colours.length],
          width: i < left.length ? 2 : 1.2,
          dash: i < left.length ? undefined : [4, 3],
          spanGaps: true,
          points: { show: false },
          value: (u, v) => (v == null ? "–" : formatNumber(v)),
        })),
      ],
    }, data, container);
    chart.setScale("x", { min: startMs / 1000, max: endMs / 1000 });
    container.removeAttribute("aria-busy");
    container.dataset.state = "ready";
    container.dataset.points = data.slice(1).map((ys) => ys.filter((y) => y != null).length).join(",");
    container.setAttribute("aria-label", t("vdpPlotLabel", { names: ids.join(", ") }));
  }

  function clear() {
    generation++;
    if (chart) chart.destroy();
    chart = null;
    container.dataset.state = "empty";
    container.dataset.points = "";
  }

  return { draw, clear, container };
}
