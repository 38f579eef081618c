// Controls apps of a project (api.md 4.6, 3.2): the list with status,
// creation on a mapped component with an algorithm that fits it, run and
// stop, delete, and an app's log (status changes, every write and what
// the edge device answered), followed while the page is open.

import "./opsstrings.js";
import { get, request } from "./api.js";
import { t, onLangChange, formatTime } from "./i18n.js";
import { h, field, input, clearErrors, apiMessage, attempt, projectTabs } from "./dom.js";

export function createApps({ showError }) {
  const root = document.getElementById("view-apps");
  const state = { projectId: 0, access: null, components: [], algorithms: [], catalog: new Map(), selected: "", poll: 0 };

  async function show(projectId, sub, access) {
    clearInterval(state.poll);
    state.projectId = projectId;
    state.access = access;
    state.selected = sub === "new" ? "" : sub;
    try {
      const [cips, algos, catalog] = await Promise.all([
        get(`/v2/project/${projectId}/componentsInProject`),
        get("/v2/controls/algorithms"),
        get("/v2/components"),
      ]);
      state.components = cips.items || [];
      state.algorithms = algos;
      // A mapped component names its catalog component by numeric id,
      // the algorithms by alphanumeric id.
      state.catalog = new Map(catalog.map((c) => [c.id, c.alphanumeric_id]));
    } catch (err) {
      showError(err);
    }
    const canCreate = access.can("POST", "/v2/controls/app") && access.write;
    root.replaceChildren(
      h("h1", { id: "apps-heading", tabIndex: -1 }, t("appsTitle")),
      projectTabs(projectId, "/apps"),
      h("div", { class: "columns" },
        h("section", { "aria-labelledby": "apps-list-h" },
          h("h2", { id: "apps-list-h" }, t("appsList")),
          canCreate ? h("a", { id: "apps-new", class: "button", href: `#/project/${projectId}/apps/new` }, t("appsNew")) : null,
          h("p", { id: "apps-count", role: "status" }),
          h("table", { id: "apps-table" },
            h("thead", {}, h("tr", {}, [t("colName"), t("appsAlgorithm"), t("appsComponent"), t("vdpStatus")].map((x) => h("th", { scope: "col" }, x)))),
            h("tbody"))),
        h("section", { id: "apps-side", "aria-live": "polite" })));
    document.getElementById("apps-heading").focus();
    await loadList();
    const side = document.getElementById("apps-side");
    if (sub === "new" && canCreate) side.replaceChildren(form());
    else if (state.selected) await showApp(state.selected);
    else side.replaceChildren(h("p", { class: "hint" }, state.components.length ? t("appsChoose") : t("appsNoComponents")));
  }

  async function loadList() {
    let answer;
    try {
      answer = await get("/v2/controls/apps", { project_id: state.projectId, per_page: 1000 });
    } catch (err) {
      showError(err);
      return;
    }
    const names = new Map(state.components.map((c) => [c.id, c.nameEN]));
    root.querySelector("#apps-table tbody").replaceChildren(...answer.items.map((a) => h("tr", { "data-app": a.id },
      h("th", { scope: "row" }, h("a", { href: `#/project/${state.projectId}/apps/${a.id}`, "aria-current": a.id === state.selected ? "page" : undefined }, a.name || a.id)),
      h("td", {}, a.algorithm), h("td", {}, names.get(a.component_in_project_id) || String(a.component_in_project_id)),
      h("td", { class: "status" }, a.status.message))));
    document.getElementById("apps-count").textContent = t("appsCount", { n: answer.meta.total_items });
  }

  function form() {
    const cip = h("select", { name: "cip", onchange: () => fit() }, state.components.map((c) => h("option", { value: c.id }, c.nameEN)));
    const algo = h("select", { name: "algorithm" });
    const general = h("p", { class: "error", role: "alert", hidden: true });
    const f = h("form", { id: "apps-form" },
      h("h2", {}, t("appsNew")),
      h("div", { class: "field" }, h("label", {}, t("appsComponent"), " ", cip)),
      h("div", { class: "field" }, h("label", {}, t("appsAlgorithm"), " ", algo)),
      h("p", { id: "apps-algo-doc", class: "hint" }),
      field(t("colName"), input({ name: "name", autocomplete: "off" })),
      field(t("vdpDescription"), input({ name: "description", autocomplete: "off" })),
      field(t("spPriority"), input({ name: "priority", type: "number", min: 1, max: 16, value: 13 })),
      field(t("appsAlive"), input({ name: "alive", type: "number", min: 1, value: 900 })),
      general,
      h("button", { type: "submit" }, t("appsCreate")));
    function fit() {
      const c = state.components.find((x) => String(x.id) === cip.value);
      const fits = state.algorithms.filter((a) => !c || a.components.some((p) => matches(p, c)));
      algo.replaceChildren(...(fits.length ? fits : state.algorithms).map((a) => h("option", { value: a.key }, a.name || a.key)));
      const a = state.algorithms.find((x) => x.key === algo.value);
      document.getElementById("apps-algo-doc").textContent = a ? a.description : "";
    }
    algo.addEventListener("change", () => {
      const a = state.algorithms.find((x) => x.key === algo.value);
      document.getElementById("apps-algo-doc").textContent = a ? a.description : "";
    });
    queueMicrotask(fit);
    f.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      clearErrors(f);
      general.hidden = true;
      const a = state.algorithms.find((x) => x.key === algo.value);
      const c = state.components.find((x) => String(x.id) === cip.value);
      const pins = a && c ? (a.components.find((p) => matches(p, c)) || { output: [] }).output : [];
      const prio = Number(f.querySelector("[name=priority]").value) || 13;
      const body = pins.length ? { setpoint_writing_params: Object.fromEntries(pins.map((p) => [p, { priority: prio, reset_value: null, keep_out_of_service: false }])) } : undefined;
      let answer;
      try {
        answer = await request("POST", "/v2/controls/app", {
          params: { project_id: state.projectId, componentinproject_id: cip.value, algorithm: algo.value,
            name: f.querySelector("[name=name]").value || undefined, description: f.querySelector("[name=description]").value || undefined,
            alive_timeout: f.querySelector("[name=alive]").value || undefined },
          body,
        });
      } catch (err) {
        general.textContent = apiMessage(err);
        general.hidden = false;
        return;
      }
      location.hash = `#/project/${state.projectId}/apps/${answer.resource.id}`;
    });
    return f;
  }

  async function showApp(id) {
    const side = document.getElementById("apps-side");
    let a, logs;
    try {
      [a, logs] = await Promise.all([
        get(`/v2/controls/app/${id}`, { project_id: state.projectId }),
        get(`/v2/controls/app/${id}/logs`, { project_id: state.projectId, per_page: 100 }),
      ]);
    } catch (err) {
      showError(err);
      return;
    }
    const running = [200, 202, 300].includes(a.status.code);
    const canRun = state.access.can("POST", "/v2/controls/app/{controls_app_id}/run") && state.access.write;
    const canDelete = state.access.can("DELETE", "/v2/controls/app/{controls_app_id}") && state.access.write;
    const msg = h("p", { id: "apps-msg", role: "status" });
    const del = h("button", { type: "button", class: "danger", id: "apps-delete", hidden: running || !canDelete, onclick: () => {
      if (del.dataset.armed !== "1") {
        del.dataset.armed = "1";
        del.textContent = t("vdpDeleteConfirm");
        return;
      }
      act(msg, () => request("DELETE", `/v2/controls/app/${id}`, { params: { project_id: state.projectId } }), () => {
        location.hash = `#/project/${state.projectId}/apps`;
      });
    } }, t("vdpDelete"));
    side.replaceChildren(
      h("h2", { id: "apps-detail-h" }, a.name || a.id),
      h("dl", { class: "facts" },
        h("dt", {}, t("vdpStatus")), h("dd", { id: "apps-status", "data-code": String(a.status.code) }, a.status.message),
        h("dt", {}, t("appsAlgorithm")), h("dd", {}, a.algorithm),
        h("dt", {}, t("appsComponent")), h("dd", {}, a.component_in_project ? a.component_in_project.nameEN : String(a.component_in_project_id)),
        a.description ? [h("dt", {}, t("vdpDescription")), h("dd", {}, a.description)] : null),
      h("div", { class: "toolbar" },
        h("button", { type: "button", id: "apps-run", hidden: !canRun, onclick: () => act(msg, () => request("POST", `/v2/controls/app/${id}/run`,
          { params: { project_id: state.projectId, run: !running } })) }, running ? t("vdpStop") : t("vdpRun")),
        del),
      msg,
      h("h3", {}, t("vdpLogs")),
      h("table", { id: "apps-logs", class: "logs" },
        h("thead", {}, h("tr", {}, [t("time"), t("appsLevel"), t("vdpLogType"), t("vdpMessage")].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, logs.items.map((l) => h("tr", { class: "level-" + l.log_level },
          h("td", {}, formatTime(Date.parse(l.created_at))), h("td", {}, l.log_level), h("td", {}, l.kind), h("td", {}, l.log_message))))));
    // The log and status follow while the page is open.
    clearInterval(state.poll);
    const seen = `${a.status.code}/${logs.meta.total_items}`;
    state.poll = setInterval(async () => {
      if (root.hidden || state.selected !== id) {
        clearInterval(state.poll);
        return;
      }
      try {
        const [b, l] = await Promise.all([get(`/v2/controls/app/${id}`, { project_id: state.projectId }),
          get(`/v2/controls/app/${id}/logs`, { project_id: state.projectId, per_page: 1 })]);
        if (`${b.status.code}/${l.meta.total_items}` !== seen) {
          await showApp(id);
          loadList();
        }
      } catch {
        // the next tick tries again
      }
    }, 2000);
  }

  // matches tells whether an algorithm's component entry fits a mapped
  // component.
  function matches(pins, cip) {
    return pins.component_alphanumeric_id === state.catalog.get(cip.component_id);
  }

  async function act(msg, fn, after) {
    if (!(await attempt(msg, fn))) return;
    if (after) after();
    else {
      await showApp(state.selected);
      await loadList();
    }
  }

  onLangChange(() => {
    if (!root.hidden && state.projectId) show(state.projectId, state.selected, state.access);
  });

  return {
    show,
    clear() {
      clearInterval(state.poll);
      state.projectId = 0;
      root.replaceChildren();
    },
  };
}
