// The caller's projects and a project's datapoints: search over name, tags
// and unit, and a checkbox per datapoint that puts it on the plot.
//
// GET /v2/project/{id} lists the dataPointIDs the caller may read (the API
// filters them by the caller's TagAuths); a datapoint's tags, unit and
// newest value come from GET /v2/datapoint/timeseries with max=1, one
// request per datapoint (the API has no list with tags), a few at a time:
// first the rows on screen, then the rest of the first detailLimit in the
// background, so that a search finds tags and units too.

import { get } from "./api.js";
import { t, onLangChange, formatNumber, formatTime } from "./i18n.js";
import { unitOf } from "./series.js";

const pageSize = 50;
const parallel = 6;
const detailLimit = 1000;

export function createProjects({ showError, openProject, plot, onRows = () => {} }) {
  const el = {
    list: document.getElementById("project-list"),
    projectsStatus: document.getElementById("projects-status"),
    title: document.getElementById("project-title"),
    search: document.getElementById("dp-search"),
    count: document.getElementById("dp-count"),
    body: document.querySelector("#dp-table tbody"),
    more: document.getElementById("dp-more"),
  };
  const state = {
    projects: [],
    project: null,
    ids: [], // readable dataPointIDs, sorted
    details: new Map(), // dataPointID -> {tags, unit, last} once read
    asked: new Set(), // dataPointIDs whose details were asked for
    limit: pageSize,
  };

  async function showProjects() {
    el.list.replaceChildren();
    try {
      state.projects = await get("/v2/user/projects");
    } catch (err) {
      showError(err);
      return;
    }
    renderProjects();
  }

  function renderProjects() {
    el.projectsStatus.textContent = state.projects.length === 0 ? t("noProjects") : t("projectsLoaded", { n: state.projects.length });
    el.list.replaceChildren(...state.projects.map((p) => {
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.className = "project";
      b.dataset.projectId = p.id;
      const name = document.createElement("strong");
      name.textContent = p.name;
      b.append(name);
      if (p.description) {
        const d = document.createElement("span");
        d.textContent = p.description;
        b.append(d);
      }
      b.addEventListener("click", () => openProject(p.id));
      li.append(b);
      return li;
    }));
  }

  async function showProject(id) {
    state.project = null;
    state.ids = [];
    state.details = new Map();
    state.asked = new Set();
    state.limit = pageSize;
    el.search.value = "";
    el.body.replaceChildren();
    el.title.textContent = "";
    plot.show(id);
    let p;
    try {
      p = await get(`/v2/project/${id}`);
    } catch (err) {
      showError(err);
      return;
    }
    state.project = p;
    state.ids = [...p.datapoints].sort((a, b) => a.localeCompare(b));
    el.title.textContent = p.name;
    render();
    fetchDetails(state.ids.slice(0, detailLimit));
  }

  function matches(id) {
    const q = el.search.value.trim().toLowerCase();
    if (!q) return true;
    if (id.toLowerCase().includes(q)) return true;
    const d = state.details.get(id);
    return Boolean(d && (d.unit.toLowerCase().includes(q) ||
      d.tags.some((tag) => `${tag.key}:${tag.value}`.toLowerCase().includes(q) || tag.value.toLowerCase().includes(q))));
  }

  // hitsShown is the datapoints the table shows, to tell whether details
  // that arrive change them.
  let hitsShown = "";
  let rerender = 0;

  function render() {
    const hits = state.ids.filter(matches);
    hitsShown = hits.slice(0, state.limit).join("\n");
    const shown = hits.slice(0, state.limit);
    el.count.textContent = t("datapointCount", { shown: shown.length, total: state.ids.length });
    el.more.hidden = hits.length <= shown.length;
    const chosen = new Set(plot.selected());
    el.body.replaceChildren(...shown.map((id) => row(id, chosen.has(id))));
    onRows(shown);
    const missing = shown.filter((id) => !state.details.has(id) && !state.asked.has(id));
    if (missing.length) fetchDetails(missing);
  }

  function row(id, checked) {
    const tr = document.createElement("tr");
    tr.dataset.dp = id;
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = checked;
    box.setAttribute("aria-label", t("plotThis", { name: id }));
    box.addEventListener("change", async () => {
      // The unit picks the axis, so it is known before the series is drawn.
      const d = state.details.get(id) || (await readDetails(id).catch(showError));
      plot.toggle(id, d ? d.unit : "", box.checked);
    });
    const name = document.createElement("th");
    name.scope = "row";
    name.textContent = id;
    tr.append(cell(box), name, cell(), cell(), cell());
    fill(tr, state.details.get(id));
    return tr;
  }

  // fill writes a row's unit, tags and newest value once they are known.
  function fill(tr, d) {
    if (!d) return;
    const [, , unit, tags, last] = tr.children;
    unit.textContent = d.unit || "–";
    const list = document.createElement("ul");
    list.className = "tags";
    for (const tag of d.tags) {
      if (tag.key === "units" && tag.source === "system") continue;
      const li = document.createElement("li");
      li.textContent = `${tag.key}: ${tag.value}`;
      list.append(li);
    }
    tags.replaceChildren(list);
    if (d.last) {
      const time = document.createElement("time");
      time.dateTime = d.last[0];
      time.textContent = formatTime(Date.parse(d.last[0]));
      last.replaceChildren(formatNumber(d.last[1]) + (d.unit ? " " + d.unit : ""), " ", time);
    } else {
      last.textContent = "–";
    }
  }

  // readDetails reads one datapoint's tags, unit and newest value and
  // shows them in its row.
  async function readDetails(id) {
    const project = state.project;
    const answer = await get("/v2/datapoint/timeseries", { project_id: project.id, dataPointID: id, max: 1 });
    const last = answer.data.length ? [answer.data[0].time, answer.data[0].value] : null;
    const d = { tags: answer.tags || [], unit: unitOf(answer.tags), last };
    if (state.project !== project) return d; // another project was opened
    state.details.set(id, d);
    const tr = el.body.querySelector(`tr[data-dp="${CSS.escape(id)}"]`);
    if (tr) fill(tr, d);
    else if (el.search.value.trim() && !rerender) {
      // A search may now match by tag or unit: the table follows, once
      // for a burst of answers, and only when the rows it shows change.
      rerender = setTimeout(() => {
        rerender = 0;
        if (state.ids.filter(matches).slice(0, state.limit).join("\n") !== hitsShown) render();
      }, 100);
    }
    return d;
  }

  async function fetchDetails(ids) {
    const project = state.project;
    const queue = ids.filter((id) => !state.asked.has(id));
    for (const id of queue) state.asked.add(id);
    const worker = async () => {
      while (queue.length > 0 && state.project === project) {
        try {
          await readDetails(queue.shift());
        } catch (err) {
          showError(err);
          return;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(parallel, queue.length) }, worker));
  }

  el.search.addEventListener("input", () => {
    state.limit = pageSize;
    render();
  });
  el.more.addEventListener("click", () => {
    state.limit += pageSize;
    render();
  });
  onLangChange(() => {
    if (state.projects.length || el.projectsStatus.textContent) renderProjects();
    if (state.project) render();
  });

  // liveValue shows a value live.js received as its row's newest value.
  function liveValue(id, ms, value) {
    const d = state.details.get(id);
    if (!d || (d.last && Date.parse(d.last[0]) > ms)) return;
    d.last = [new Date(ms).toISOString(), value];
    const tr = el.body.querySelector(`tr[data-dp="${CSS.escape(id)}"]`);
    if (tr) {
      fill(tr, d);
      tr.dataset.live = String(value);
    }
  }

  // clear forgets everything shown, when the user signs out: the next
  // user of the tab sees nothing of it.
  function clear() {
    state.projects = [];
    state.project = null;
    state.ids = [];
    state.details = new Map();
    state.asked = new Set();
    el.list.replaceChildren();
    el.body.replaceChildren();
    el.projectsStatus.textContent = "";
    el.title.textContent = "";
    el.search.value = "";
    plot.show(0);
    onRows([]);
  }

  return { showProjects, showProject, clear, liveValue };
}

function cell(child) {
  const td = document.createElement("td");
  if (child) td.append(child);
  return td;
}
