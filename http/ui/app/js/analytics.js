// Analytics of a project (issue 22 item 8): its mapped components with
// their pins' datapoints and attributes, its analysis instances with a run
// over a chosen period and their results, and a result's page: signal
// colour, interpretation, recommendations, KPIs, and its pie and bar
// charts. Names and texts come in the UI's language (the API's
// result_language and language parameters).

import { get, request } from "./api.js";
import { t, onLangChange, lang, formatNumber, formatTime } from "./i18n.js";
import "./analyticsstrings.js";
import { pieChart, barChart, dataTable } from "./charts.js";
import { projectSection, setProjectTitle } from "./tabs.js";
import { projectAccess } from "./access.js";

export function createAnalytics({ showError }) {
  const section = projectSection("analytics", `
    <section aria-labelledby="cip-heading">
      <h2 id="cip-heading"></h2>
      <div id="cip-list"></div>
    </section>
    <section aria-labelledby="inst-heading">
      <h2 id="inst-heading"></h2>
      <div id="inst-list"></div>
      <form id="inst-new" class="run" hidden>
        <label><span id="inst-new-cip-label"></span> <select id="inst-new-cip"></select></label>
        <label><span id="inst-new-fn-label"></span> <select id="inst-new-fn"></select></label>
        <label><span id="inst-new-name-label"></span> <input id="inst-new-name" type="text" maxlength="200"></label>
        <label><input id="inst-new-weekly" type="checkbox"> <span id="inst-new-weekly-label"></span></label>
        <button id="inst-new-go" type="submit"></button>
      </form>
      <p id="inst-status" role="status" aria-live="polite"></p>
    </section>
    <section id="results-box" aria-labelledby="results-heading" hidden>
      <h2 id="results-heading" tabindex="-1"></h2>
      <div id="results-list"></div>
    </section>`);
  const result = projectSection("result", `<div id="result-body"></div>`);
  const $ = (id) => document.getElementById(id);
  const state = { mayRun: false, mayCreate: false, mayFunctions: false, projectId: 0, cips: [], details: new Map(), instances: [], functions: new Map(), instance: null, results: [], result: null, resultKey: null, status: null };

  function say(key, params) {
    state.status = { key, params };
    $("inst-status").textContent = t(key, params);
  }

  // loadFunctions reads the functions' names in the language, when the
  // user's roles grant the catalog (without it instances show ids).
  async function loadFunctions() {
    if (!state.mayFunctions) return;
    const fs = await get("/v2/analytics/functions", { language: lang() });
    state.functions = new Map(fs.map((f) => [f.id, f]));
  }

  // show opens the project's analytics page.
  async function show(projectId) {
    state.projectId = projectId;
    state.instance = null;
    $("results-box").hidden = true;
    $("inst-status").textContent = "";
    state.status = null;
    // Nothing of the project shown before stays while this one loads.
    $("cip-list").replaceChildren();
    $("inst-list").replaceChildren();
    try {
      const access = await projectAccess(projectId);
      state.mayRun = access.can("POST", "/v2/analytics/instance/{instance_id}/run");
      state.mayCreate = access.can("POST", "/v2/analytics/instance");
      state.mayFunctions = access.can("GET", "/v2/analytics/functions");
      const [cips, insts] = await Promise.all([
        get(`/v2/project/${projectId}/componentsInProject`),
        get("/v2/analytics/instances", { project_id: projectId }),
        loadFunctions(),
        setProjectTitle(projectId, "analytics"),
      ]);
      state.cips = cips.items;
      state.instances = insts.items;
      const details = await Promise.all(state.cips.map((c) => get(`/v2/project/${projectId}/componentInProject/${c.id}`)));
      state.details = new Map(details.map((d) => [d.id, d]));
    } catch (err) {
      showError(err);
      return;
    }
    render();
  }

  function cipName(id) {
    const d = state.details.get(id);
    if (!d) return "#" + id;
    return d.display_name || (lang() === "de" ? d.nameDE : d.nameEN) || d.nameEN;
  }

  function fnName(id) {
    const f = state.functions.get(id);
    return f ? f.name : "#" + id;
  }

  function instName(inst) {
    return inst.config.name || `${fnName(inst.config.analysisfunction_id)} (${cipName(inst.config.componentinproject_id)})`;
  }

  function render() {
    $("cip-heading").textContent = t("components");
    $("inst-heading").textContent = t("instances");
    // Components with their mapping.
    if (state.details.size === 0) {
      $("cip-list").replaceChildren(para(t("noComponents")));
    } else {
      const table = tableOf([t("colComponent"), t("colPins"), t("colAttributes")]);
      for (const c of state.cips) {
        const d = state.details.get(c.id);
        const pins = document.createElement("ul");
        pins.className = "plain";
        for (const p of d.pins) {
          const li = document.createElement("li");
          const name = lang() === "de" ? p.nameDE : p.nameEN;
          li.textContent = `${name}: ${p.dataPointID || (p.masked ? t("pinMasked") : t("pinUnmapped"))}`;
          if (!p.dataPointID) li.className = "muted";
          pins.append(li);
        }
        const attrs = document.createElement("ul");
        attrs.className = "plain";
        for (const a of d.attributes) {
          const li = document.createElement("li");
          li.textContent = `${a.key}: ${a.value}${a.unit ? " " + a.unit : ""}`;
          attrs.append(li);
        }
        const tr = document.createElement("tr");
        tr.dataset.cip = c.id;
        tr.append(rowHead(cipName(c.id) + " (" + d.component.alphanumeric_id + ")"), cell(pins), cell(attrs));
        table.tBodies[0].append(tr);
      }
      $("cip-list").replaceChildren(table);
    }
    // Instances with a run form each.
    if (state.instances.length === 0) {
      $("inst-list").replaceChildren(para(t("noInstances")));
    } else {
      // A user whose roles do not grant runs is offered none.
      const table = tableOf([t("colInstance"), t("colFunction"), t("colComponent"), t("colEnabled"), ...(state.mayRun ? [t("run")] : []), t("results")]);
      const today = new Date();
      const weekAgo = new Date(today.getTime() - 7 * 86400000);
      for (const inst of state.instances) {
        const name = instName(inst);
        const tr = document.createElement("tr");
        tr.dataset.instance = inst.id;
        const form = document.createElement("form");
        form.className = "run";
        form.setAttribute("aria-label", t("runOf", { name }));
        const from = dateInput(t("runFrom"), weekAgo);
        const to = dateInput(t("runTo"), today);
        from.input.className = "run-from";
        to.input.className = "run-to";
        const go = document.createElement("button");
        go.type = "submit";
        go.textContent = t("run");
        form.append(from.label, to.label, go);
        form.addEventListener("submit", (ev) => {
          ev.preventDefault();
          runInstance(inst, from.input.value, to.input.value);
        });
        const list = document.createElement("button");
        list.type = "button";
        list.className = "show-results";
        list.textContent = t("results");
        list.setAttribute("aria-label", t("showResults", { name }));
        list.addEventListener("click", () => showResults(inst));
        tr.append(rowHead(name), cell(text(fnName(inst.config.analysisfunction_id))), cell(text(cipName(inst.config.componentinproject_id))),
          cell(text(inst.config.enabled ? t("yes") : t("no"))), ...(state.mayRun ? [cell(form)] : []), cell(list));
        table.tBodies[0].append(tr);
      }
      $("inst-list").replaceChildren(table);
    }
    renderNewInstance();
    if (state.status) $("inst-status").textContent = t(state.status.key, state.status.params);
    if (state.instance) renderResults();
  }

  // renderNewInstance fills the form that makes an instance: a mapped
  // component and a function that fits it (the catalog's components).
  function renderNewInstance() {
    const form = $("inst-new");
    form.hidden = !(state.mayCreate && state.mayFunctions && state.details.size > 0);
    if (form.hidden) return;
    form.setAttribute("aria-label", t("newInstance"));
    $("inst-new-cip-label").textContent = t("colComponent");
    $("inst-new-fn-label").textContent = t("colFunction");
    $("inst-new-name-label").textContent = t("instanceName");
    $("inst-new-weekly-label").textContent = t("weeklyRuns");
    $("inst-new-go").textContent = t("newInstance");
    const cipSelect = $("inst-new-cip");
    const chosen = cipSelect.value;
    cipSelect.replaceChildren(...state.cips.map((c) => option(c.id, cipName(c.id))));
    if (state.cips.some((c) => String(c.id) === chosen)) cipSelect.value = chosen;
    fillFunctions();
  }

  function fillFunctions() {
    const d = state.details.get(Number($("inst-new-cip").value));
    const kind = d ? d.component.alphanumeric_id : "";
    const fits = [...state.functions.values()].filter((f) => (f.components || []).includes(kind));
    $("inst-new-fn").replaceChildren(...fits.map((f) => option(f.id, f.name)));
    $("inst-new-go").disabled = fits.length === 0;
  }

  async function createInstance() {
    const body = {
      analysisfunction_id: Number($("inst-new-fn").value),
      componentinproject_id: Number($("inst-new-cip").value),
      name: $("inst-new-name").value.trim(),
      enabled: $("inst-new-weekly").checked,
    };
    try {
      await request("POST", "/v2/analytics/instance", { params: { project_id: state.projectId }, body });
    } catch (err) {
      showError(err);
      return;
    }
    $("inst-new-name").value = "";
    await show(state.projectId);
    say("instanceCreated", { name: body.name || fnName(body.analysisfunction_id) });
  }

  async function runInstance(inst, fromDay, toDay) {
    const start = new Date(fromDay + "T00:00:00Z");
    const end = new Date(toDay + "T00:00:00Z");
    if (!(start < end)) {
      say("badPeriod", {});
      return;
    }
    const name = instName(inst);
    let answer;
    try {
      const q = new URLSearchParams({ project_id: state.projectId, start: start.toISOString().replace(".000", ""), end: end.toISOString().replace(".000", "") });
      answer = await request("POST", `/v2/analytics/instance/${inst.id}/run?${q}`);
    } catch (err) {
      showError(err);
      return;
    }
    say("runStarted", { name });
    const id = answer.resource.result_id;
    await showResults(inst);
    // The run is computed off the request: its status moves on its own.
    for (let i = 0; i < 240 && state.projectId && state.instance === inst; i++) {
      const r = state.results.find((x) => x.result_id === id);
      if (r && r.status !== "running") {
        say("runDone", { name, status: statusText(r.status) });
        return;
      }
      await new Promise((res) => setTimeout(res, 250));
      await loadResults(inst);
    }
  }

  async function loadResults(inst) {
    try {
      state.results = await get(`/v2/analytics/instance/${inst.id}/results`, { project_id: state.projectId, result_language: lang() });
    } catch (err) {
      showError(err);
      state.results = [];
    }
    if (state.instance === inst) renderResults();
  }

  async function showResults(inst) {
    state.instance = inst;
    await loadResults(inst);
    $("results-box").hidden = false;
    $("results-heading").focus();
  }

  function renderResults() {
    const inst = state.instance;
    $("results-heading").textContent = t("showResults", { name: instName(inst) });
    if (state.results.length === 0) {
      $("results-list").replaceChildren(para(t("noResults")));
      return;
    }
    const table = tableOf([t("colPeriod"), t("colStatus"), t("colSignal"), t("colKind"), ""]);
    for (const r of state.results) {
      const tr = document.createElement("tr");
      tr.dataset.result = r.result_id;
      tr.dataset.status = r.status;
      const period = `${formatTime(Date.parse(r.input_parameters.start))} – ${formatTime(Date.parse(r.input_parameters.end))}`;
      const open = document.createElement("a");
      open.href = `#/project/${state.projectId}/analytics/${inst.id}/${r.result_id}`;
      open.textContent = t("openResult");
      open.setAttribute("aria-label", t("openResultOf", { from: formatTime(Date.parse(r.input_parameters.start)), to: formatTime(Date.parse(r.input_parameters.end)) }));
      tr.append(rowHead(period), cell(text(statusText(r.status))), cell(signalBadge(r.signal_color)), cell(text(r.weekly ? t("weekly") : t("manual"))), cell(open));
      table.tBodies[0].append(tr);
    }
    $("results-list").replaceChildren(table);
  }

  // showResult opens a result's page.
  async function showResult(projectId, instanceId, resultId) {
    state.projectId = projectId;
    state.resultKey = [instanceId, resultId];
    const body = $("result-body");
    body.dataset.state = "loading";
    let r;
    try {
      const [answer] = await Promise.all([
        get(`/v2/analytics/instance/${instanceId}/result/${resultId}`, { project_id: projectId, result_language: lang() }),
        setProjectTitle(projectId, "result"),
      ]);
      r = answer;
    } catch (err) {
      body.dataset.state = "error";
      showError(err);
      return;
    }
    state.result = r;
    renderResult();
  }

  function renderResult() {
    const r = state.result;
    const body = $("result-body");
    const parts = [];
    const h2 = document.createElement("h2");
    h2.id = "result-heading";
    h2.textContent = t("resultOf", { function: r.function_name, component: r.display_name });
    parts.push(h2);
    const period = para(`${formatTime(Date.parse(r.start))} – ${formatTime(Date.parse(r.end))} · ${statusText(r.status)}`);
    parts.push(period);
    if (r.status === "running") parts.push(para(t("resultRunning")));
    const sig = document.createElement("p");
    sig.className = "signal-line";
    sig.append(t("signal") + ": ", signalBadge(r.signal_color));
    parts.push(sig);
    if (r.summary_kpi && r.summary_kpi.current) {
      const c = r.summary_kpi.current;
      parts.push(para(t("summary", { name: c.name, value: c.value == null ? "–" : `${formatNumber(c.value)} ${c.unit}` })));
    }
    parts.push(heading(t("interpretation")), para(r.interpretation));
    parts.push(heading(t("recommendations")));
    if (r.recommendation.length) {
      const ul = document.createElement("ul");
      ul.id = "result-recommendations";
      for (const rec of r.recommendation) {
        const li = document.createElement("li");
        li.textContent = rec;
        ul.append(li);
      }
      parts.push(ul);
    } else {
      parts.push(para(t("noRecommendations")));
    }
    if (r.kpi.length) {
      parts.push(heading(t("kpis")));
      const table = tableOf([t("colKpi"), t("colValue")]);
      table.id = "result-kpis";
      for (const k of r.kpi) {
        const tr = document.createElement("tr");
        tr.append(rowHead(k.name), cell(text(`${formatNumber(k.value)} ${k.unit}`)));
        table.tBodies[0].append(tr);
      }
      parts.push(table);
    }
    if (r.plots.length) {
      parts.push(heading(t("plots")));
      const grid = document.createElement("div");
      grid.className = "charts";
      for (const p of r.plots) {
        const fig = document.createElement("figure");
        fig.dataset.type = p.type;
        const values = p.data.length ? p.data[0].values : [];
        const args = { title: p.title, categories: p.categories, values, unit: p.unit };
        const svg = p.type === "pie_chart" ? pieChart(args) : barChart(args);
        svg.setAttribute("aria-label", p.title);
        const cap = document.createElement("figcaption");
        cap.textContent = p.title + (p.unit ? ` (${p.unit})` : "");
        const details = document.createElement("details");
        const sum = document.createElement("summary");
        sum.textContent = t("chartValues", { title: p.title });
        details.append(sum, dataTable(p.title, p.categories, values, p.unit));
        fig.append(cap, svg, details);
        grid.append(fig);
      }
      parts.push(grid);
    }
    if (r.info.length) {
      parts.push(heading(t("info")));
      for (const i of r.info) parts.push(para(i));
    }
    const back = document.createElement("a");
    back.href = `#/project/${state.projectId}/analytics`;
    back.textContent = t("backToAnalytics");
    parts.push(back);
    body.replaceChildren(...parts);
    body.dataset.state = r.status === "running" ? "running" : "ready";
    body.dataset.signal = r.signal_color || "";
  }

  $("inst-new-cip").addEventListener("change", fillFunctions);
  $("inst-new").addEventListener("submit", (ev) => {
    ev.preventDefault();
    createInstance();
  });

  onLangChange(async () => {
    if (!section.hidden && state.projectId) {
      await loadFunctions().catch(showError);
      render();
      if (state.instance) loadResults(state.instance);
    }
    if (!result.hidden && state.resultKey) showResult(state.projectId, ...state.resultKey);
  });

  return { show, showResult };
}

// statusText is a result's status (running, Success, Failed) in the
// UI's language.
function statusText(s) {
  const key = "status_" + s;
  const out = t(key);
  return out === key ? s : out;
}

function signalBadge(colour) {
  const c = colour || "grey";
  const s = document.createElement("span");
  s.className = "signal signal-" + c;
  s.dataset.signal = c;
  s.textContent = t("signal_" + c);
  return s;
}

function option(value, label) {
  const o = document.createElement("option");
  o.value = String(value);
  o.textContent = label;
  return o;
}

function dateInput(labelText, date) {
  const label = document.createElement("label");
  const input = document.createElement("input");
  input.type = "date";
  input.required = true;
  input.value = date.toISOString().slice(0, 10);
  label.append(labelText + " ", input);
  return { label, input };
}

function tableOf(heads) {
  const table = document.createElement("table");
  table.className = "grid";
  const thead = table.createTHead().insertRow();
  for (const h of heads) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = h;
    thead.append(th);
  }
  table.createTBody();
  return table;
}

function rowHead(s) {
  const th = document.createElement("th");
  th.scope = "row";
  th.textContent = s;
  return th;
}

function cell(child) {
  const td = document.createElement("td");
  if (child) td.append(child);
  return td;
}

function text(s) {
  return document.createTextNode(s);
}

function para(s) {
  const p = document.createElement("p");
  p.textContent = s;
  return p;
}

function heading(s) {
  const h = document.createElement("h3");
  h.textContent = s;
  return h;
}
