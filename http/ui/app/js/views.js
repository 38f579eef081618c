// Saved plot views and favorite datapoints (issue 22 item 5).
//
// A plot view (POST /v2/project/{id}/plot-view) keeps the datapoints on the
// plot and its time range; it belongs to whoever saved it, and anyone of
// the company who may use the project opens it by its link
// (#/project/{id}/view/{uuid}), seeing the datapoints their TagAuths let
// them read. Favorites (POST /v2/datapoint/favorite) are a star on each
// datapoint's row and a short list that plots one with a click.

import { get, request } from "./api.js";
import { t, addStrings, onLangChange, formatTime } from "./i18n.js";
import { unitOf } from "./series.js";
import { projectAccess } from "./access.js";

addStrings({
  en: {
    views: "Saved views",
    viewName: "Name of the view",
    saveView: "Save view",
    updateView: "Update view",
    openView: "Open",
    deleteView: "Delete",
    copyLink: "Link to share",
    noViews: "No saved views yet.",
    viewSaved: "View “{name}” saved.",
    viewOpened: "View “{name}” opened: {n} datapoints.",
    viewDeleted: "View “{name}” deleted.",
    viewEmpty: "Choose datapoints to plot before saving a view.",
    viewOpenedOther: "View “{name}” opened: {n} datapoints. Someone else saved it: saving it makes a copy of your own.",
    unnamed: "(unnamed)",
    favorites: "Favorites",
    noFavorites: "No favorites: mark datapoints with the star in the list.",
    favorite: "Favorite {name}",
    plotFavorite: "Plot {name}",
    savedViewsList: "Your views in this project",
    yourFavorites: "Your favorites",
    favoriteIn: "{name} in {project}",
  },
  de: {
    views: "Gespeicherte Ansichten",
    viewName: "Name der Ansicht",
    saveView: "Ansicht speichern",
    updateView: "Ansicht aktualisieren",
    openView: "Öffnen",
    deleteView: "Löschen",
    copyLink: "Link zum Teilen",
    noViews: "Noch keine gespeicherten Ansichten.",
    viewSaved: "Ansicht „{name}“ gespeichert.",
    viewOpened: "Ansicht „{name}“ geöffnet: {n} Datenpunkte.",
    viewDeleted: "Ansicht „{name}“ gelöscht.",
    viewEmpty: "Wählen Sie Datenpunkte für das Diagramm, bevor Sie eine Ansicht speichern.",
    viewOpenedOther: "Ansicht „{name}“ geöffnet: {n} Datenpunkte. Jemand anderes hat sie gespeichert: Speichern legt Ihre eigene Kopie an.",
    unnamed: "(ohne Namen)",
    favorites: "Favoriten",
    noFavorites: "Keine Favoriten: markieren Sie Datenpunkte mit dem Stern in der Liste.",
    favorite: "{name} als Favorit",
    plotFavorite: "{name} plotten",
    savedViewsList: "Ihre Ansichten in diesem Projekt",
    yourFavorites: "Ihre Favoriten",
    favoriteIn: "{name} in {project}",
  },
});

export function createViews({ showError, plot }) {
  const panel = document.getElementById("plot-panel");
  const box = document.createElement("section");
  box.className = "views";
  box.setAttribute("aria-labelledby", "views-heading");
  box.innerHTML = `
    <h3 id="views-heading"></h3>
    <div class="view-save">
      <label for="view-name"></label>
      <input id="view-name" type="text" maxlength="200" autocomplete="off">
      <button id="view-save" type="button"></button>
    </div>
    <div class="view-pick">
      <label for="view-list"></label>
      <select id="view-list"></select>
      <button id="view-open" type="button"></button>
      <button id="view-delete" type="button"></button>
    </div>
    <p class="view-link"><label for="view-link"></label> <input id="view-link" type="text" readonly></p>
    <p id="view-status" role="status" aria-live="polite"></p>
    <h3 id="fav-heading"></h3>
    <ul id="fav-list" class="favorites" aria-labelledby="fav-heading"></ul>`;
  panel.append(box);
  const el = {
    heading: box.querySelector("#views-heading"),
    name: box.querySelector("#view-name"),
    nameLabel: box.querySelector('label[for="view-name"]'),
    save: box.querySelector("#view-save"),
    list: box.querySelector("#view-list"),
    listLabel: box.querySelector('label[for="view-list"]'),
    open: box.querySelector("#view-open"),
    del: box.querySelector("#view-delete"),
    link: box.querySelector("#view-link"),
    linkLabel: box.querySelector('label[for="view-link"]'),
    linkLine: box.querySelector(".view-link"),
    status: box.querySelector("#view-status"),
    favHeading: box.querySelector("#fav-heading"),
    favList: box.querySelector("#fav-list"),
    tbody: document.querySelector("#dp-table tbody"),
  };
  // may says which of the view and favorite endpoints the user's roles grant.
  const state = { projectId: 0, views: [], current: null, favorites: new Set(), units: new Map(), status: null, may: {} };

  function texts() {
    el.heading.textContent = t("views");
    el.nameLabel.textContent = t("viewName");
    el.listLabel.textContent = t("savedViewsList");
    el.open.textContent = t("openView");
    el.del.textContent = t("deleteView");
    el.linkLabel.textContent = t("copyLink");
    el.favHeading.textContent = t("favorites");
    el.save.textContent = state.current && state.current.mine ? t("updateView") : t("saveView");
    if (state.status) el.status.textContent = t(state.status.key, state.status.params);
    renderViews();
    renderFavorites();
    for (const b of el.tbody.querySelectorAll("button.star")) b.setAttribute("aria-label", t("favorite", { name: b.dataset.dp }));
  }

  function say(key, params = {}) {
    state.status = { key, params };
    el.status.textContent = t(key, params);
  }

  function viewName(v) {
    return v.name || t("unnamed");
  }

  function renderViews() {
    const chosen = el.list.value;
    if (state.views.length === 0) {
      const o = document.createElement("option");
      o.value = "";
      o.textContent = t("noViews");
      el.list.replaceChildren(o);
    } else {
      el.list.replaceChildren(...state.views.map((v) => {
        const o = document.createElement("option");
        o.value = v.id;
        o.textContent = `${viewName(v)} — ${formatTime(Date.parse(v.updated_at))}`;
        return o;
      }));
      if (state.views.some((v) => v.id === chosen)) el.list.value = chosen;
    }
    el.open.disabled = el.del.disabled = state.views.length === 0;
    el.linkLine.hidden = !state.current;
    if (state.current) el.link.value = linkOf(state.current);
  }

  function linkOf(v) {
    return `${location.origin}${location.pathname}#/project/${v.project_id}/view/${v.id}`;
  }

  async function loadViews() {
    const pid = state.projectId;
    if (!state.may.list) return;
    const vs = await get(`/v2/project/${pid}/plot-views`);
    if (pid !== state.projectId) return;
    state.views = vs;
    renderViews();
  }

  // userId is the signed-in user's id, read once per sign-in.
  let me = null;
  function userId() {
    if (!me) {
      me = get("/v2/user").then((u) => u.user.id);
      me.catch(() => {
        me = null;
      });
    }
    return me;
  }

  async function unit(id) {
    if (state.units.has(id)) return state.units.get(id);
    const answer = await get("/v2/datapoint/timeseries", { project_id: state.projectId, dataPointID: id, max: 1 });
    const u = unitOf(answer.tags);
    state.units.set(id, u);
    return u;
  }

  // rangeNow is the plot's range as [start, end] ISO strings.
  function rangeNow() {
    const from = Date.parse(document.getElementById("range-from").value);
    const to = Date.parse(document.getElementById("range-to").value);
    return [new Date(from).toISOString(), new Date(to).toISOString()];
  }

  async function save() {
    const ids = plot.selected();
    if (ids.length === 0) {
      say("viewEmpty");
      return;
    }
    const [start, end] = rangeNow();
    const body = { name: el.name.value.trim(), start, end, samplerate: "auto", datapoints: ids };
    const mine = state.current && state.current.mine && state.current.name === body.name;
    try {
      const v = mine
        ? await request("PUT", `/v2/project/${state.projectId}/plot-view/${state.current.id}`, { body })
        : await request("POST", `/v2/project/${state.projectId}/plot-view`, { body });
      state.current = { ...v, mine: true };
      history.replaceState(null, "", `#/project/${state.projectId}/view/${v.id}`);
      await loadViews();
      el.list.value = v.id;
      say("viewSaved", { name: viewName(v) });
      texts();
    } catch (err) {
      showError(err);
    }
  }

  // open draws a view: its range, then its shown datapoints.
  async function open(id) {
    let v;
    let uid;
    try {
      [v, uid] = await Promise.all([get(`/v2/project/${state.projectId}/plot-view/${id}`), userId()]);
    } catch (err) {
      showError(err);
      return;
    }
    state.current = { ...v, mine: uid === v.user_id };
    el.name.value = v.name;
    const from = document.getElementById("range-from");
    const to = document.getElementById("range-to");
    from.value = localInput(Date.parse(v.start));
    to.value = localInput(Date.parse(v.end));
    for (const s of plot.selected()) plot.toggle(s, "", false);
    document.getElementById("range-apply").click();
    try {
      const units = await Promise.all(v.datapoints.map(unit));
      v.datapoints.forEach((d, i) => plot.toggle(d, units[i], true));
    } catch (err) {
      showError(err);
    }
    // The table's checkboxes follow the plot.
    document.getElementById("dp-search").dispatchEvent(new Event("input"));
    say(state.current.mine ? "viewOpened" : "viewOpenedOther", { name: viewName(v), n: v.datapoints.length });
    texts();
  }

  async function remove() {
    const v = state.views.find((x) => x.id === el.list.value);
    if (!v) return;
    try {
      await request("DELETE", `/v2/project/${state.projectId}/plot-view/${v.id}`);
      if (state.current && state.current.id === v.id) state.current = null;
      await loadViews();
      say("viewDeleted", { name: viewName(v) });
      texts();
    } catch (err) {
      showError(err);
    }
  }

  // Favorites.
  async function loadFavorites() {
    const pid = state.projectId;
    if (!state.may.favorites) return;
    const ids = await get(`/v2/project/${pid}/datapoints/favorites`);
    if (pid !== state.projectId) return;
    state.favorites = new Set(ids);
    renderFavorites();
    decorate();
  }

  function renderFavorites() {
    if (state.favorites.size === 0) {
      const li = document.createElement("li");
      li.className = "hint";
      li.textContent = t("noFavorites");
      el.favList.replaceChildren(li);
      return;
    }
    el.favList.replaceChildren(...[...state.favorites].sort().map((id) => {
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = "★ " + id;
      b.setAttribute("aria-label", t("plotFavorite", { name: id }));
      b.dataset.dp = id;
      b.addEventListener("click", async () => {
        try {
          if (!plot.selected().includes(id)) plot.toggle(id, await unit(id), true);
          document.getElementById("dp-search").dispatchEvent(new Event("input"));
        } catch (err) {
          showError(err);
        }
      });
      li.append(b);
      return li;
    }));
  }

  async function toggleFavorite(id, button) {
    const on = !state.favorites.has(id);
    try {
      await request(on ? "POST" : "DELETE", "/v2/datapoint/favorite", { params: { project_id: state.projectId, dataPointID: id } });
      if (on) state.favorites.add(id);
      else state.favorites.delete(id);
      button.setAttribute("aria-pressed", String(on));
      button.textContent = on ? "★" : "☆";
      renderFavorites();
    } catch (err) {
      showError(err);
    }
  }

  // decorate puts a star button into each datapoint row's name cell.
  function decorate() {
    for (const tr of el.tbody.querySelectorAll("tr[data-dp]")) {
      const id = tr.dataset.dp;
      let b = tr.querySelector("button.star");
      if (!b && !state.may.star) continue;
      if (!b) {
        b = document.createElement("button");
        b.type = "button";
        b.className = "star";
        b.dataset.dp = id;
        b.setAttribute("aria-label", t("favorite", { name: id }));
        b.addEventListener("click", () => toggleFavorite(id, b));
        const th = tr.querySelector("th");
        if (!th) continue;
        th.prepend(b);
      }
      const on = state.favorites.has(id);
      b.setAttribute("aria-pressed", String(on));
      b.textContent = on ? "★" : "☆";
    }
  }
  new MutationObserver(() => decorate()).observe(el.tbody, { childList: true });

  // The projects page lists the user's favorites of every project
  // (GET /v2/user/favorites), each a link to its project, whenever it
  // shows.
  const projectsView = document.getElementById("view-projects");
  const all = document.createElement("section");
  all.setAttribute("aria-labelledby", "all-fav-heading");
  all.innerHTML = `<h2 id="all-fav-heading"></h2><ul id="all-fav-list" class="favorites"></ul>`;
  all.hidden = true;
  projectsView.append(all);
  let allFavorites = [];
  async function showAllFavorites() {
    try {
      const [favs, projects] = await Promise.all([get("/v2/user/favorites"), get("/v2/user/projects")]);
      const names = new Map(projects.map((p) => [p.id, p.name]));
      allFavorites = favs.map((f) => ({ id: f.dataPointID, projectId: f.project_id, project: names.get(f.project_id) || "#" + f.project_id }));
    } catch {
      allFavorites = []; // a role without these endpoints: no list
    }
    renderAllFavorites();
  }
  function renderAllFavorites() {
    all.hidden = allFavorites.length === 0;
    all.querySelector("h2").textContent = t("yourFavorites");
    all.querySelector("ul").replaceChildren(...allFavorites.map((f) => {
      const li = document.createElement("li");
      const a = document.createElement("a");
      a.href = `#/project/${f.projectId}`;
      a.dataset.dp = f.id;
      a.textContent = "★ " + t("favoriteIn", { name: f.id, project: f.project });
      li.append(a);
      return li;
    }));
  }
  new MutationObserver(() => {
    if (!projectsView.hidden) showAllFavorites();
  }).observe(projectsView, { attributes: true, attributeFilter: ["hidden"] });
  onLangChange(renderAllFavorites);

  el.save.addEventListener("click", save);
  el.open.addEventListener("click", () => {
    if (el.list.value) location.hash = `#/project/${state.projectId}/view/${el.list.value}`;
  });
  el.del.addEventListener("click", remove);
  el.link.addEventListener("focus", () => el.link.select());
  onLangChange(texts);
  texts();

  return {
    // show starts over for a project; viewId, when given, is opened.
    async show(projectId, viewId) {
      if (projectId !== state.projectId) {
        state.units = new Map();
        state.current = null;
        el.name.value = "";
      }
      state.projectId = projectId;
      state.status = null;
      el.status.textContent = "";
      // A view asked for opens at once (its link needs no roles read);
      // what the user may do and the lists load beside it.
      const opened = viewId ? open(viewId) : Promise.resolve();
      try {
        const access = await projectAccess(projectId);
        const p = "/v2/project/{project_id}";
        state.may = {
          list: access.can("GET", p + "/plot-views"),
          save: access.can("POST", p + "/plot-view"),
          update: access.can("PUT", p + "/plot-view/{plot_view_id}"),
          remove: access.can("DELETE", p + "/plot-view/{plot_view_id}"),
          favorites: access.can("GET", p + "/datapoints/favorites"),
          star: access.can("POST", "/v2/datapoint/favorite") && access.can("DELETE", "/v2/datapoint/favorite"),
        };
      } catch (err) {
        showError(err);
      }
      // Actions the user's roles do not grant are not offered (the API
      // would refuse them).
      box.querySelector(".view-save").hidden = !state.may.save;
      box.querySelector(".view-pick").hidden = !state.may.list;
      el.del.hidden = !state.may.remove;
      el.favHeading.hidden = el.favList.hidden = !state.may.favorites;
      for (const b of el.tbody.querySelectorAll("button.star")) b.hidden = !state.may.star;
      await Promise.all([loadViews(), loadFavorites()]).catch(showError);
      await opened;
      texts();
    },
    clear() {
      me = null;
      allFavorites = [];
      renderAllFavorites();
      state.projectId = 0;
      state.views = [];
      state.current = null;
      state.favorites = new Set();
      el.name.value = "";
      el.status.textContent = "";
      texts();
    },
  };
}

function localInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 16);
}
