// Pie and bar charts of analysis results, drawn as SVG: a handful of
// categories each, so no library is needed. Each chart carries a title
// and a description for screen readers, and each slice or bar a <title>
// with its category and value (shown on hover too).

import { formatNumber, formatTime, locale } from "./i18n.js";

const svgNS = "http://www.w3.org/2000/svg";
// Okabe and Ito's palette, as the plots use.
export const colours = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000"];

function svgEl(name, attrs = {}) {
  const e = document.createElementNS(svgNS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

function titled(e, text) {
  const title = svgEl("title");
  title.textContent = text;
  e.append(title);
  return e;
}

// pieChart draws categories with their values as a pie with a legend.
export function pieChart({ title, categories, values, unit }) {
  const w = 360;
  const h = 220;
  const r = 90;
  const cx = 100;
  const cy = 110;
  const svg = svgEl("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: "img", class: "chart pie" });
  titled(svg, title);
  const total = values.reduce((a, v) => a + Math.max(0, v), 0);
  let angle = -Math.PI / 2;
  values.forEach((v, i) => {
    const share = total > 0 ? Math.max(0, v) / total : 0;
    const label = `${categories[i]}: ${formatNumber(v)} ${unit} (${formatNumber(share * 100)} %)`;
    const colour = colours[i % colours.length];
    let shape;
    if (share >= 0.9999) {
      shape = svgEl("circle", { cx, cy, r, fill: colour });
    } else if (share > 0) {
      const a2 = angle + share * 2 * Math.PI;
      const large = share > 0.5 ? 1 : 0;
      const p = (a) => `${(cx + r * Math.cos(a)).toFixed(2)} ${(cy + r * Math.sin(a)).toFixed(2)}`;
      shape = svgEl("path", { d: `M ${cx} ${cy} L ${p(angle)} A ${r} ${r} 0 ${large} 1 ${p(a2)} Z`, fill: colour, stroke: "#fff", "stroke-width": 1 });
      angle = a2;
    }
    if (shape) {
      shape.dataset.category = categories[i];
      svg.append(titled(shape, label));
    }
    const ly = 20 + i * 22;
    svg.append(svgEl("rect", { x: 210, y: ly - 11, width: 14, height: 14, fill: colour }));
    const text = svgEl("text", { x: 230, y: ly, "font-size": 12 });
    text.textContent = `${categories[i]} ${formatNumber(share * 100)} %`;
    svg.append(text);
  });
  return svg;
}

// barChart draws one bar per category (the first series of data).
export function barChart({ title, categories, values, unit }) {
  const n = Math.max(1, values.length);
  const left = 48;
  const bottom = 40;
  const h = 220;
  const w = Math.max(360, left + 16 + n * 18);
  const plotH = h - bottom - 12;
  const max = Math.max(0, ...values);
  const min = Math.min(0, ...values);
  const span = max - min || 1;
  const y = (v) => 12 + plotH * (1 - (v - min) / span);
  const svg = svgEl("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: "img", class: "chart bar" });
  titled(svg, title);
  svg.append(svgEl("line", { x1: left, y1: y(0), x2: w - 8, y2: y(0), stroke: "#333" }));
  svg.append(svgEl("line", { x1: left, y1: 12, x2: left, y2: 12 + plotH, stroke: "#333" }));
  for (const v of [max, min === 0 ? max / 2 : min]) {
    const tick = svgEl("text", { x: left - 4, y: y(v) + 4, "font-size": 11, "text-anchor": "end" });
    tick.textContent = formatNumber(v);
    svg.append(tick);
  }
  const unitText = svgEl("text", { x: 4, y: 10, "font-size": 11 });
  unitText.textContent = unit;
  svg.append(unitText);
  const slot = (w - left - 16) / n;
  values.forEach((v, i) => {
    const x = left + 8 + i * slot;
    const bw = Math.max(2, slot * 0.7);
    const top = Math.min(y(v), y(0));
    const bar = svgEl("rect", { x: x.toFixed(2), y: top.toFixed(2), width: bw.toFixed(2), height: Math.max(1, Math.abs(y(v) - y(0))).toFixed(2), fill: colours[0] });
    bar.dataset.category = categories[i];
    svg.append(titled(bar, `${longLabel(categories[i])}: ${formatNumber(v)} ${unit}`));
    if (n <= 12 || i % Math.ceil(n / 12) === 0) {
      const label = svgEl("text", { x: (x + bw / 2).toFixed(2), y: h - bottom + 14, "font-size": 10, "text-anchor": "middle" });
      label.textContent = shortLabel(categories[i]);
      svg.append(label);
    }
  });
  return svg;
}

// shortLabel writes a category for an axis: a time (the bar charts of
// cycles name each by its start) as a short local date and time, other
// text cut to 12 characters.
export function shortLabel(c) {
  const s = String(c);
  if (isTime(s)) {
    return new Intl.DateTimeFormat(locale(), { day: "numeric", month: "numeric", hour: "2-digit", minute: "2-digit" }).format(new Date(s));
  }
  return s.slice(0, 12);
}

function isTime(s) {
  return /^\d{4}-\d{2}-\d{2}T/.test(s) && !Number.isNaN(Date.parse(s));
}

// longLabel writes a category in full: a time in the UI's format.
function longLabel(c) {
  return isTime(String(c)) ? formatTime(Date.parse(c)) : String(c);
}

// dataTable is the chart's numbers as a table, for those who do not see it.
export function dataTable(caption, categories, values, unit) {
  const table = document.createElement("table");
  table.className = "chart-data";
  const cap = document.createElement("caption");
  cap.textContent = caption;
  table.append(cap);
  const body = document.createElement("tbody");
  categories.forEach((c, i) => {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = longLabel(c);
    const td = document.createElement("td");
    td.textContent = `${formatNumber(values[i])} ${unit}`;
    tr.append(th, td);
    body.append(tr);
  });
  table.append(body);
  return table;
}
