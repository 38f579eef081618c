// Setpoints of a project (api.md 4.6): a datapoint's bounds (GET and PUT
// /v2/datapoint), a write with a dry-run preview of the device's priority
// array, and an acked write's stages as they happen (GET
// /v2/datapoint/setpoint/{reference}, followed until written, reported or
// failed). The edge device's connection is shown, since every write goes
// through it.

import "./opsstrings.js";
import { get, request } from "./api.js";
import { t, onLangChange, formatNumber, formatTime } from "./i18n.js";
import { h, field, input, clearErrors, apiMessage, projectTabs } from "./dom.js";

const final = ["written", "reported", "failed"];

export function createSetpoints({ showError }) {
  const root = document.getElementById("view-setpoints");
  const state = { projectId: 0, access: null, datapoints: [], dp: "", follow: 0, edge: 0 };

  function render() {
    const a = state.access;
    const boundsOK = a.can("PUT", "/v2/datapoint") && a.write;
    const writeOK = a.can("POST", "/v2/datapoint/setpoint") && a.write;
    const dpForm = h("form", { id: "sp-choose", class: "inline" },
      field(t("spDatapoint"), input({ name: "dp", list: "sp-datapoints", autocomplete: "off", required: true })),
      h("datalist", { id: "sp-datapoints" }, state.datapoints.map((id) => h("option", { value: id }))),
      h("button", { type: "submit" }, t("spOpen")));
    dpForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      choose(dpForm.querySelector("[name=dp]").value.trim());
    });
    const bounds = h("form", { id: "sp-bounds", hidden: true },
      h("h2", {}, t("spBounds")),
      h("p", { id: "sp-bounds-now", role: "status" }),
      h("div", { hidden: !boundsOK, class: "inline" },
        field(t("spMin"), input({ name: "min", inputMode: "decimal" })),
        field(t("spMax"), input({ name: "max", inputMode: "decimal" })),
        h("button", { type: "submit" }, t("spSaveBounds"))),
      h("p", { id: "sp-bounds-msg", role: "status" }));
    bounds.addEventListener("submit", (ev) => {
      ev.preventDefault();
      saveBounds(bounds);
    });
    const write = h("form", { id: "sp-write", hidden: true },
      h("h2", {}, t("spWrite")),
      h("div", { class: "inline" },
        field(t("spValue"), input({ name: "value", inputMode: "decimal", required: true })),
        field(t("spPriority"), input({ name: "priority", type: "number", min: 1, max: 16, value: 13 })),
        h("label", { class: "check" }, h("input", { type: "checkbox", name: "keep" }), " ", t("spKeep"))),
      h("div", { class: "toolbar" },
        h("button", { type: "button", id: "sp-dryrun", onclick: () => dryRun(write) }, t("spDryRun")),
        h("button", { type: "submit", id: "sp-submit" }, t("spSubmit"))),
      h("p", { id: "sp-write-msg", role: "status" }));
    write.addEventListener("submit", (ev) => {
      ev.preventDefault();
      writeAcked(write);
    });
    root.replaceChildren(
      h("h1", { id: "sp-heading", tabIndex: -1 }, t("spTitle")),
      projectTabs(state.projectId, "/setpoints"),
      h("p", { id: "sp-edge", role: "status" }),
      dpForm,
      h("div", { class: "columns" },
        h("div", {}, bounds, writeOK ? write : h("p", { id: "sp-readonly", class: "hint", hidden: true }, t("spReadOnly"))),
        h("div", { "aria-live": "polite" },
          h("section", { id: "sp-preview", "aria-labelledby": "sp-preview-h", hidden: true }, h("h2", { id: "sp-preview-h" }, t("spPreview")), h("div")),
          h("section", { id: "sp-op", "aria-labelledby": "sp-op-h", hidden: true }, h("h2", { id: "sp-op-h" }, t("spOperation")), h("div")))));
  }

  async function show(projectId, sub, access) {
    clearInterval(state.edge);
    state.projectId = projectId;
    state.access = access;
    try {
      const p = await get(`/v2/project/${projectId}`);
      state.datapoints = [...p.datapoints].sort();
    } catch (err) {
      showError(err);
    }
    render();
    document.getElementById("sp-heading").focus();
    edgeStatus();
    state.edge = setInterval(() => (root.hidden ? clearInterval(state.edge) : edgeStatus()), 5000);
    if (sub) {
      root.querySelector("#sp-choose [name=dp]").value = sub;
      await choose(sub);
    }
  }

  async function edgeStatus() {
    const el = document.getElementById("sp-edge");
    try {
      const s = await get(`/v2/project/${state.projectId}/edge`);
      el.dataset.online = String(s.online);
      el.textContent = !s.configured ? t("spEdgeNone") : s.online ? t("spEdgeOnline") : t("spEdgeOffline");
    } catch (err) {
      el.textContent = apiMessage(err);
    }
  }

  async function choose(dp) {
    if (!dp) return;
    state.dp = dp;
    const now = document.getElementById("sp-bounds-now");
    document.getElementById("sp-bounds").hidden = false;
    const w = document.getElementById("sp-write") || document.getElementById("sp-readonly");
    w.hidden = false;
    let b = null;
    try {
      b = await get("/v2/datapoint", { project_id: state.projectId, dataPointID: dp });
    } catch (err) {
      if (err.status !== 404) {
        now.textContent = apiMessage(err);
        return;
      }
    }
    const has = b && b.setpoint_min_value != null;
    now.dataset.min = has ? String(b.setpoint_min_value) : "";
    now.dataset.max = has ? String(b.setpoint_max_value) : "";
    now.textContent = has ? t("spBoundsAre", { dp, min: formatNumber(b.setpoint_min_value), max: formatNumber(b.setpoint_max_value) }) : t("spNoBounds", { dp });
    const f = document.getElementById("sp-bounds");
    f.querySelector("[name=min]").value = has ? b.setpoint_min_value : "";
    f.querySelector("[name=max]").value = has ? b.setpoint_max_value : "";
  }

  async function saveBounds(f) {
    clearErrors(f);
    const msg = document.getElementById("sp-bounds-msg");
    const num = (n) => {
      const v = f.querySelector(`[name=${n}]`).value.trim();
      return v === "" ? null : Number(v);
    };
    try {
      await request("PUT", "/v2/datapoint", { params: { project_id: state.projectId, dataPointID: state.dp },
        body: { setpoint_min_value: num("min"), setpoint_max_value: num("max") } });
      msg.className = "";
      msg.textContent = t("spBoundsSaved");
      await choose(state.dp);
    } catch (err) {
      msg.className = "error";
      msg.textContent = apiMessage(err);
    }
  }

  function params(f, extra) {
    return {
      project_id: state.projectId,
      dataPointID: state.dp,
      value: f.querySelector("[name=value]").value.trim(),
      priority: f.querySelector("[name=priority]").value || undefined,
      keep_out_of_service: f.querySelector("[name=keep]").checked || undefined,
      ...extra,
    };
  }

  // dryRun asks the device what a write would overwrite: its priority
  // array, the chosen slot marked.
  async function dryRun(f) {
    const msg = document.getElementById("sp-write-msg");
    msg.className = "";
    msg.textContent = t("spAsking");
    let answer;
    try {
      answer = await request("POST", "/v2/datapoint/setpoint", { params: params(f, { dryrun: true }) });
    } catch (err) {
      msg.className = "error";
      msg.textContent = apiMessage(err);
      return;
    }
    msg.textContent = "";
    const r = answer.resource;
    const box = document.getElementById("sp-preview");
    box.hidden = false;
    box.dataset.state = "ready";
    box.querySelector("div").replaceChildren(
      h("p", {}, t("spWouldWrite", { value: String(r.value), priority: r.priority, old: fmt(r.old_value) })),
      priorityTable(r.priority_array, r.priority, r.value));
  }

  async function writeAcked(f) {
    const msg = document.getElementById("sp-write-msg");
    msg.className = "";
    msg.textContent = t("working");
    let answer;
    try {
      answer = await request("POST", "/v2/datapoint/setpoint", { params: params(f, { acked: true }) });
    } catch (err) {
      msg.className = "error";
      msg.textContent = apiMessage(err);
      return;
    }
    msg.textContent = t("spSent", { ref: answer.resource.reference });
    follow(answer.resource.reference);
  }

  // follow shows an acked operation's stages until it ends: polled every
  // 250 ms (the API has no push for operations), for at most 40 s (the
  // device answers within 30 s or the write fails).
  function follow(ref) {
    clearInterval(state.follow);
    const box = document.getElementById("sp-op");
    box.hidden = false;
    box.dataset.state = "following";
    box.dataset.reference = ref;
    const until = Date.now() + 40000;
    let seen = "";
    const tick = async () => {
      let op;
      try {
        op = await get("/v2/datapoint/setpoint/" + ref);
      } catch (err) {
        clearInterval(state.follow);
        box.querySelector("div").replaceChildren(h("p", { class: "error" }, apiMessage(err)));
        return;
      }
      let log = [];
      try {
        log = JSON.parse(op.log || "[]");
      } catch {
        // shown without stages
      }
      const key = op.status + log.length;
      if (key !== seen) {
        seen = key;
        renderOp(box, op, log);
      }
      if (final.includes(op.status) || Date.now() > until || root.hidden) {
        clearInterval(state.follow);
        box.dataset.state = op.status;
      }
    };
    tick();
    state.follow = setInterval(tick, 250);
  }

  function renderOp(box, op, log) {
    const pa = op.state_before && op.state_before.priorityArray;
    box.querySelector("div").replaceChildren(...[
      h("p", {}, t("spOpSummary", { dp: op.dataPointID, value: String(op.value), priority: op.priority })),
      h("p", { id: "sp-op-status", class: "status s-" + op.status }, t("spStatus", { status: op.status })),
      op.reason ? h("p", { class: "error" }, op.reason) : null,
      h("ol", { id: "sp-stages", class: "stages" }, log.map((e) => h("li", { "data-status": e.status },
        h("strong", {}, e.status), " ", h("time", { dateTime: e.time }, formatTime(Date.parse(e.time))), " – ", e.msg))),
      final.includes(op.status) && op.status !== "failed" ? h("p", {}, t("spOverwritten", { old: fmt(op.old_value) })) : null,
      Array.isArray(pa) || typeof pa === "string" ? priorityTable(parseArray(pa), op.priority, op.value, t("spArrayBefore")) : null].filter(Boolean));
  }

  onLangChange(() => {
    if (!root.hidden && state.projectId) show(state.projectId, state.dp, state.access);
  });

  return {
    show,
    clear() {
      clearInterval(state.follow);
      clearInterval(state.edge);
      state.projectId = 0;
      root.replaceChildren();
    },
  };
}

// priorityTable shows the 17 slots (priorities 1 to 16, then the
// relinquish default), the chosen one marked with what it would become.
// Laid out across: a row of priorities over a row of their values.
function priorityTable(slots, priority, value, caption = t("spArray")) {
  const list = slots || [];
  const mark = (i) => (i + 1 === priority ? "chosen" : "");
  return h("table", { class: "priority-array" },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, h("th", { scope: "row" }, t("spPriority")),
      list.map((v, i) => h("th", { scope: "col", class: mark(i) }, i === 16 ? t("spDefault") : String(i + 1))))),
    h("tbody", {}, h("tr", {}, h("th", { scope: "row" }, t("spSlotValue")),
      list.map((v, i) => h("td", { class: mark(i), "aria-current": mark(i) ? "true" : undefined },
        fmt(v) + (mark(i) ? " → " + String(value) : ""))))));
}

function fmt(v) {
  return v === null || v === undefined || v === "null" ? "–" : typeof v === "number" ? formatNumber(v) : String(v);
}

// parseArray reads a priority array given as a list or as the text of
// one ("[null, 21.5, ...]").
function parseArray(pa) {
  if (Array.isArray(pa)) return pa;
  try {
    return JSON.parse(pa);
  } catch {
    return [];
  }
}
