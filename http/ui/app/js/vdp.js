// Virtual datapoints of a project (api.md 4.5): the list with status and
// a filter, a form per type (formula with up to five pins, gradient,
// absolute humidity) whose validation errors appear at the field they
// concern, and a datapoint's page: run and stop, recompute, delete, its
// logs, and a plot of its output beside its sources, redrawn as live
// values of them arrive.

import "./opsstrings.js";
import { get, request } from "./api.js";
import { t, onLangChange, formatTime } from "./i18n.js";
import { h, field, input, select, clearErrors, showFieldError, apiMessage, attempt, localInput, projectTabs } from "./dom.js";
import { createMiniPlot } from "./miniplot.js";

const statusFilters = [["", "vdpAllStatus"], ["202", "Running"], ["102", "Ready to start"], ["302", "Stopped"], ["304", "Health check failed"],
  ["201", "Start failed"], ["100", "Created"]];
const aggregates = ["last", "first", "sum", "mean", "median", "max", "min", "timeweighted_mean", "integral"];
const triggers = ["every_value", "every_minute", "every_hour"];
// moving: a status on its way to another (Created, Starting, Stopping,
// Deleting).
const moving = (v) => [100, 200, 300, 500].includes(v.status_code);
const pinNames = {
  formula: ["P1", "P2", "P3", "P4", "P5"],
  gradient: ["input"],
  absolute_humidity: ["relative_humidity", "temperature", "pressure"],
};

export function createVDP({ showError, live }) {
  const root = document.getElementById("view-vdp");
  const state = { projectId: 0, access: null, selected: "", datapoints: [], detail: null, poll: 0, pollUntil: 0, reload: 0, formPins: 0 };
  let plot = null;

  function render() {
    const heading = h("h1", { id: "vdp-heading", tabIndex: -1 }, t("vdpTitle"));
    const search = h("input", { id: "vdp-search", type: "search", autocomplete: "off", oninput: () => loadList() });
    const filter = h("select", { id: "vdp-filter", onchange: () => loadList() },
      statusFilters.map(([v, text]) => h("option", { value: v }, v ? text : t(text))));
    const create = h("a", { id: "vdp-new", class: "button", href: `#/project/${state.projectId}/vdp/new`,
      "data-needs": "POST /v2/project/{project_id}/virtual_datapoint", "data-needs-write": true }, t("vdpNew"));
    const list = h("section", { class: "vdp-list", "aria-labelledby": "vdp-list-heading" },
      h("h2", { id: "vdp-list-heading" }, t("vdpList")),
      h("div", { class: "filters" },
        h("label", { for: "vdp-search" }, t("vdpSearch")), search,
        h("label", { for: "vdp-filter" }, t("vdpStatus")), filter),
      create,
      h("p", { id: "vdp-count", role: "status" }),
      h("table", { id: "vdp-table" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("colName")), h("th", { scope: "col" }, t("vdpStatus")))),
        h("tbody")));
    const side = h("section", { id: "vdp-side", class: "vdp-side", "aria-live": "polite" });
    root.replaceChildren(heading, projectTabs(state.projectId, "/vdp"), h("div", { class: "columns" }, list, side));
  }

  async function show(projectId, sub, access) {
    clearInterval(state.poll);
    if (projectId !== state.projectId || !root.firstChild) {
      state.projectId = projectId;
      render();
      try {
        const p = await get(`/v2/project/${projectId}`);
        state.datapoints = [...p.datapoints].sort();
      } catch (err) {
        showError(err);
      }
    }
    state.access = access;
    for (const el of root.querySelectorAll("[data-needs]")) {
      const [m, p] = el.dataset.needs.split(" ");
      el.hidden = !access.can(m, p) || ("needsWrite" in el.dataset && !access.write);
    }
    state.selected = sub === "new" ? "" : sub;
    await loadList();
    const side = document.getElementById("vdp-side");
    if (sub === "new") side.replaceChildren(form());
    else if (sub) await showDetail(sub);
    else {
      side.replaceChildren(h("p", { class: "hint" }, t("vdpChoose")));
      live.watch("vdp", []);
    }
    document.getElementById("vdp-heading").focus();
  }

  async function loadList() {
    const search = document.getElementById("vdp-search").value.trim();
    const code = document.getElementById("vdp-filter").value;
    let answer;
    try {
      answer = await get(`/v2/project/${state.projectId}/virtual_datapoints`,
        { search: search || undefined, filter: code ? "status_code=" + code : undefined, per_page: 1000 });
    } catch (err) {
      showError(err);
      return;
    }
    const body = root.querySelector("#vdp-table tbody");
    body.replaceChildren(...answer.items.map((v) => h("tr", { "data-vdp": v.dataPointID },
      h("th", { scope: "row" }, h("a", { href: `#/project/${state.projectId}/vdp/${encodeURIComponent(v.dataPointID)}`,
        "aria-current": v.dataPointID === state.selected ? "page" : undefined }, v.dataPointID)),
      h("td", { class: "status s" + v.status_code }, v.status))));
    document.getElementById("vdp-count").textContent = t("vdpCount", { n: answer.meta.total_items });
  }

  // --- the form ---------------------------------------------------------

  function form() {
    const type = h("select", { id: "vdp-type", onchange: () => fillType() },
      [["formula", t("vdpFormula")], ["gradient", t("vdpGradient")], ["absolute_humidity", t("vdpHumidity")]].map(([v, text]) => h("option", { value: v }, text)));
    const dpList = h("datalist", { id: "vdp-datapoints" }, state.datapoints.map((id) => h("option", { value: id })));
    const pins = h("div", { id: "vdp-pins" });
    const params = h("fieldset", { id: "vdp-params" }, h("legend", {}, t("vdpParameters")));
    const general = h("p", { id: "vdp-form-error", class: "error", role: "alert", hidden: true });
    const f = h("form", { id: "vdp-form", class: "vdp-form", novalidate: true },
      h("h2", {}, t("vdpNew")),
      h("div", { class: "field" }, h("label", { for: "vdp-type" }, t("vdpType")), type),
      field(t("vdpOutputId"), input({ name: "dataPointID", required: true, autocomplete: "off" }), "dataPointID"),
      field(t("vdpDescription"), input({ name: "description", autocomplete: "off" })),
      dpList, pins,
      h("button", { type: "button", id: "vdp-add-pin", onclick: () => addPin() }, t("vdpAddPin")),
      params, general,
      h("button", { type: "submit" }, t("vdpCreate")));
    f.addEventListener("submit", (ev) => {
      ev.preventDefault();
      submit(f);
    });
    queueMicrotask(fillType);
    return f;

    function fillType() {
      const typ = type.value;
      pins.replaceChildren();
      state.formPins = 0;
      if (typ === "formula") addPin();
      else for (const name of pinNames[typ]) addPin(name);
      document.getElementById("vdp-add-pin").hidden = typ !== "formula";
      params.replaceChildren(h("legend", {}, t("vdpParameters")));
      if (typ === "formula") {
        params.append(field(t("vdpFormulaText"), (id) => h("textarea", { id, name: "formula", rows: 2, placeholder: "P1*2;" }), "config.parameters.formula"),
          h("p", { class: "hint" }, t("vdpFormulaHint")));
      } else if (typ === "gradient") {
        params.append(field(t("vdpFactorization"), input({ name: "factorization", type: "text", inputMode: "decimal", value: "1" }), "config.parameters.factorization"));
      } else {
        for (const [name, def, opts] of [["relative_humidity_unit", "count", ["count", "percent"]], ["temperature_unit", "celsius", ["celsius", "kelvin", "fahrenheit"]],
          ["pressure_unit", "Pa", ["Pa", "hPa", "kPa", "bar"]]]) {
          params.append(field(t("vdpParam_" + name), select(opts.map((o) => [o, o]), { name, value: def }), "config.parameters." + name));
        }
      }
    }
  }

  // addPin adds a pin's fieldset: its source, window, aggregate, trigger.
  function addPin(name) {
    const pins = document.getElementById("vdp-pins");
    const n = pins.children.length;
    if (!name) {
      if (n >= 5) return;
      name = "P" + (n + 1);
    }
    const f = "config.pins." + name;
    const kind = h("select", { onchange: () => showKind() });
    const count = field(t("vdpCount1"), input({ name: "count", inputMode: "numeric", value: "1" }), f + ".data_range.count");
    const time = field(t("vdpTime"), input({ name: "time", placeholder: "15m, 24h, 1d" }), f + ".data_range.time");
    const start = field(t("vdpCronStart"), input({ name: "start", placeholder: "0 * * * *" }), f + ".data_range.start");
    const end = field(t("vdpCronEnd"), input({ name: "end", placeholder: "59 * * * *" }), f + ".data_range.end");
    for (const [v, text] of [["count", t("vdpWindowCount")], ["time", t("vdpWindowTime")], ["cron", t("vdpWindowCron")]]) kind.append(h("option", { value: v }, text));
    const optional = name === "pressure";
    const set = h("fieldset", { class: "pin", "data-pin": name },
      h("legend", {}, t("vdpPin", { name }) + (optional ? " " + t("vdpOptional") : "")),
      field(t("vdpSource"), input({ name: "source", list: "vdp-datapoints", autocomplete: "off", required: !optional }), f + ".dataPointID"),
      h("div", { class: "field" }, h("label", {}, t("vdpWindow"), " ", kind)),
      count, time, start, end,
      field(t("vdpAggregate"), select(aggregates.map((a) => [a, a]), { name: "aggregate", value: "last" }), f + ".aggregate"),
      field(t("vdpTrigger"), select(triggers.map((a) => [a, a]), { name: "trigger" }), f + ".trigger"));
    function showKind() {
      count.hidden = kind.value !== "count";
      time.hidden = kind.value !== "time";
      start.hidden = end.hidden = kind.value !== "cron";
    }
    showKind();
    // A pin's own error without a subfield lands on its source.
    set.querySelector("[name=source]").dataset.field = f;
    pins.append(set);
    set.querySelector("[name=aggregate]").value = "last";
  }

  function body(f) {
    const pins = {};
    for (const set of f.querySelectorAll("fieldset.pin")) {
      const v = (n) => set.querySelector(`[name=${n}]`).value.trim();
      if (!v("source") && set.dataset.pin === "pressure") continue;
      const kind = set.querySelector("select:not([name])").value;
      let range;
      if (kind === "count") range = { count: /^\d+$/.test(v("count")) ? Number(v("count")) : v("count") };
      else if (kind === "time") range = { time: v("time") };
      else range = { start: v("start"), end: v("end") };
      pins[set.dataset.pin] = { dataPointID: v("source"), data_range: range, aggregate: v("aggregate"), trigger: v("trigger") };
    }
    const parameters = {};
    for (const el of f.querySelectorAll("#vdp-params [name]")) {
      const raw = el.value.trim();
      parameters[el.name] = el.name === "factorization" && raw !== "" && Number.isFinite(Number(raw)) ? Number(raw) : raw;
    }
    return { pins, parameters };
  }

  async function submit(f) {
    clearErrors(f);
    const general = document.getElementById("vdp-form-error");
    general.hidden = true;
    const id = f.querySelector("[name=dataPointID]").value.trim();
    try {
      await request("POST", `/v2/project/${state.projectId}/virtual_datapoint`, {
        params: { dataPointID: id, type: document.getElementById("vdp-type").value, description: f.querySelector("[name=description]").value || undefined },
        body: body(f),
      });
    } catch (err) {
      if (err.status === 400 && showFieldError(f, err.message)) return;
      general.textContent = apiMessage(err);
      general.hidden = false;
      return;
    }
    location.hash = `#/project/${state.projectId}/vdp/${encodeURIComponent(id)}`;
  }

  // --- one virtual datapoint -------------------------------------------

  async function showDetail(id) {
    const side = document.getElementById("vdp-side");
    let v;
    try {
      v = await get(`/v2/project/${state.projectId}/virtual_datapoint`, { dataPointID: id });
    } catch (err) {
      showError(err);
      return;
    }
    state.detail = v;
    const sources = [...new Set(Object.values(v.pins).map((p) => p.dataPointID).filter(Boolean))].sort();
    const canWrite = state.access.write;
    const act = (path) => state.access.can("POST", path) && canWrite;
    const running = [200, 202].includes(v.status_code);
    const msg = h("p", { id: "vdp-action-msg", role: "status" });
    const now = Date.now();
    const recompute = h("form", { id: "vdp-recompute", class: "inline", hidden: !act("/v2/project/{project_id}/virtual_datapoint/recompute") },
      field(t("from"), input({ type: "datetime-local", name: "start", value: localInput(now - 24 * 3600e3) })),
      field(t("to"), input({ type: "datetime-local", name: "end", value: localInput(now) })),
      h("button", { type: "submit" }, t("vdpRecompute")));
    recompute.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const s = Date.parse(recompute.querySelector("[name=start]").value);
      const e = Date.parse(recompute.querySelector("[name=end]").value);
      action(() => request("POST", `/v2/project/${state.projectId}/virtual_datapoint/recompute`,
        { params: { dataPointID: id, start: new Date(s).toISOString(), end: new Date(e).toISOString() } }), "vdpRecomputeStarted");
    });
    const del = h("button", { type: "button", id: "vdp-delete", class: "danger", hidden: running || !state.access.can("DELETE", "/v2/project/{project_id}/virtual_datapoint") || !canWrite,
      onclick: () => {
        if (del.dataset.armed !== "1") {
          del.dataset.armed = "1";
          del.textContent = t("vdpDeleteConfirm");
          return;
        }
        action(() => request("DELETE", `/v2/project/${state.projectId}/virtual_datapoint`, { params: { dataPointID: id } }), "", () => {
          location.hash = `#/project/${state.projectId}/vdp`;
        });
      } }, t("vdpDelete"));
    const runButton = h("button", { type: "button", id: "vdp-run", hidden: !act("/v2/project/{project_id}/virtual_datapoint/run"),
      onclick: () => action(() => request("POST", `/v2/project/${state.projectId}/virtual_datapoint/run`, { params: { dataPointID: id, run: !running } })) },
    running ? t("vdpStop") : t("vdpRun"));
    const plotBox = h("div", { id: "vdp-plot", class: "miniplot", role: "img", "data-state": "empty" });
    side.replaceChildren(
      h("h2", { id: "vdp-detail-heading", tabIndex: -1 }, v.dataPointID),
      h("dl", { class: "facts" },
        h("dt", {}, t("vdpStatus")), h("dd", { id: "vdp-status", "data-code": String(v.status_code) }, v.status),
        h("dt", {}, t("vdpType")), h("dd", {}, v.type),
        v.description ? [h("dt", {}, t("vdpDescription")), h("dd", {}, v.description)] : null,
        Object.entries(v.parameters).map(([k, val]) => [h("dt", {}, k), h("dd", { class: k === "formula" ? "code" : "" }, String(val))])),
      h("table", { class: "pins" },
        h("caption", {}, t("vdpPins")),
        h("thead", {}, h("tr", {}, [t("vdpPinName"), t("vdpSource"), t("vdpWindow"), t("vdpAggregate"), t("vdpTrigger")].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, Object.entries(v.pins).sort().map(([name, p]) => h("tr", {},
          h("th", { scope: "row" }, name), h("td", {}, p.masked ? t("vdpHidden") : p.dataPointID),
          h("td", {}, rangeText(p.data_range)), h("td", {}, p.aggregate), h("td", {}, p.trigger))))),
      h("div", { class: "toolbar" }, runButton, del),
      recompute, msg,
      h("h3", {}, t("vdpPlot")), plotBox,
      h("h3", {}, t("vdpLogs")),
      h("table", { id: "vdp-logs", class: "logs" },
        h("thead", {}, h("tr", {}, [t("time"), t("vdpLogType"), t("vdpStatus"), t("vdpMessage")].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, [...v.logs].reverse().slice(0, 100).map((l) => h("tr", {},
          h("td", {}, formatTime(Number(BigInt(l.ts) / 1000000n))), h("td", {}, l.type), h("td", {}, l.status_text), h("td", {}, l.message))))));
    drawPlot(v, sources);
    live.watch("vdp", [v.dataPointID, ...sources]);
    // While a move is under way, the page follows it.
    clearInterval(state.poll);
    if (moving(v) || Date.now() < state.pollUntil) state.poll = setInterval(() => refresh(id), 1000);
  }

  function drawPlot(v, sources) {
    const end = Date.now();
    const box = document.getElementById("vdp-plot");
    if (!plot || plot.container !== box) {
      if (plot) plot.clear();
      plot = createMiniPlot(box);
    }
    plot.draw(state.projectId, [v.dataPointID], sources.filter((s) => s !== v.dataPointID), end - 3600e3, end + 60e3).catch(showError);
  }

  async function refresh(id) {
    if (state.selected !== id || root.hidden) {
      clearInterval(state.poll);
      return;
    }
    const before = state.detail;
    let v;
    try {
      v = await get(`/v2/project/${state.projectId}/virtual_datapoint`, { dataPointID: id });
    } catch {
      return;
    }
    if (v.status_code !== before.status_code || v.logs.length !== before.logs.length) {
      clearInterval(state.poll);
      await showDetail(id);
      loadList();
    } else if (!moving(v) && Date.now() >= state.pollUntil) clearInterval(state.poll);
  }

  async function action(fn, doneKey = "", after = null) {
    const msg = document.getElementById("vdp-action-msg");
    if (!(await attempt(msg, fn))) return;
    msg.textContent = doneKey ? t(doneKey) : "";
    state.pollUntil = Date.now() + 20000; // the page follows what the action set off
    if (after) after();
    else {
      await showDetail(state.selected);
      await loadList();
      if (doneKey) document.getElementById("vdp-action-msg").textContent = t(doneKey);
    }
  }

  // A live value of the output or a source redraws the plot, at most
  // once a second.
  live.onValue((id) => {
    const v = state.detail;
    if (root.hidden || !v || state.reload) return;
    const sources = [...new Set(Object.values(v.pins).map((p) => p.dataPointID).filter(Boolean))].sort();
    if (id !== v.dataPointID && !sources.includes(id)) return;
    state.reload = setTimeout(() => {
      state.reload = 0;
      if (!root.hidden && state.detail === v) drawPlot(v, sources);
    }, 1000);
  });

  onLangChange(() => {
    if (!root.hidden && state.projectId) {
      const sub = location.hash.split("/vdp/")[1];
      root.replaceChildren();
      show(state.projectId, sub ? decodeURIComponent(sub) : "", state.access);
    }
  });

  return {
    show,
    clear() {
      clearInterval(state.poll);
      state.projectId = 0;
      state.detail = null;
      root.replaceChildren();
    },
  };
}

function rangeText(r) {
  if (!r) return "count 1";
  if (r.count !== undefined) return "count " + r.count;
  if (r.time) return "time " + r.time;
  return `cron ${r.start} – ${r.end}`;
}
