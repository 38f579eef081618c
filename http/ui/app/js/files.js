// Files of the company or of a project (issue 22 item 9): folders (made
// by the paths of their files), upload by choosing or dropping files,
// download through the presigned link the API hands out, delete with a
// confirmation, and the space's quota as bars.

import { get, request, token, ApiError } from "./api.js";
import { t, addStrings, onLangChange, formatNumber, formatTime } from "./i18n.js";
import { projectSection, setProjectTitle } from "./tabs.js";
import { projectAccess } from "./access.js";

addStrings({
  en: {
    quota: "Quota",
    quotaFiles: "Files: {used} of {limit}",
    quotaBytes: "Space: {used} of {limit}",
    folder: "Folder",
    topFolder: "All files",
    folderPath: "Current folder",
    newFolder: "New folder",
    newFolderName: "Name of the new folder",
    openFolder: "Open folder {name}",
    upload: "Upload",
    chooseFiles: "Choose files",
    dropHere: "Drop files here to upload them into this folder, or choose them.",
    uploading: "Uploading {name}…",
    uploaded: "{name} uploaded.",
    colFile: "Name",
    colSize: "Size",
    colModified: "Modified",
    colActions: "Actions",
    download: "Download",
    downloadOf: "Download {name}",
    deleteFile: "Delete",
    deleteOf: "Delete {name}",
    confirmDelete: "Delete {name}?",
    yesDelete: "Yes, delete",
    cancel: "Cancel",
    deleted: "{name} deleted.",
    noFiles: "No files in this folder.",
    filesCount: "{n} files",
    badFolder: "A folder name must not contain / and must not be . or ..",
    linkReady: "The download of {name} has started.",
    noCompanyFiles: "Your roles do not include the company's files (a company role does).",
    noProjectFiles: "Your roles do not include this project's files.",
  },
  de: {
    quota: "Kontingent",
    quotaFiles: "Dateien: {used} von {limit}",
    quotaBytes: "Speicher: {used} von {limit}",
    folder: "Ordner",
    topFolder: "Alle Dateien",
    folderPath: "Aktueller Ordner",
    newFolder: "Neuer Ordner",
    newFolderName: "Name des neuen Ordners",
    openFolder: "Ordner {name} öffnen",
    upload: "Hochladen",
    chooseFiles: "Dateien wählen",
    dropHere: "Dateien hier ablegen, um sie in diesen Ordner hochzuladen, oder wählen.",
    uploading: "{name} wird hochgeladen…",
    uploaded: "{name} hochgeladen.",
    colFile: "Name",
    colSize: "Größe",
    colModified: "Geändert",
    colActions: "Aktionen",
    download: "Herunterladen",
    downloadOf: "{name} herunterladen",
    deleteFile: "Löschen",
    deleteOf: "{name} löschen",
    confirmDelete: "{name} löschen?",
    yesDelete: "Ja, löschen",
    cancel: "Abbrechen",
    deleted: "{name} gelöscht.",
    noFiles: "Keine Dateien in diesem Ordner.",
    filesCount: "{n} Dateien",
    badFolder: "Ein Ordnername darf kein / enthalten und nicht . oder .. sein",
    linkReady: "Der Download von {name} hat begonnen.",
    noCompanyFiles: "Ihre Rollen umfassen die Dateien der Firma nicht (eine Firmenrolle tut es).",
    noProjectFiles: "Ihre Rollen umfassen die Dateien dieses Projekts nicht.",
  },
});

export function createFiles({ showError }) {
  const section = projectSection("files", `
    <section class="quota" aria-labelledby="quota-heading">
      <h2 id="quota-heading"></h2>
      <div id="quota-bars"></div>
    </section>
    <nav id="folder-path" class="breadcrumb"></nav>
    <div class="file-tools">
      <label for="new-folder" id="new-folder-label"></label>
      <input id="new-folder" type="text" autocomplete="off" maxlength="200">
      <button id="new-folder-go" type="button"></button>
    </div>
    <div id="drop" class="drop" tabindex="0" aria-describedby="drop-text">
      <p id="drop-text"></p>
      <label class="choose"><span id="choose-text"></span>
        <input id="file-input" type="file" multiple></label>
    </div>
    <p id="files-status" role="status" aria-live="polite"></p>
    <table id="file-table" class="grid">
      <thead><tr><th scope="col" id="fcol-name"></th><th scope="col" id="fcol-size"></th>
        <th scope="col" id="fcol-mod"></th><th scope="col" id="fcol-act"></th></tr></thead>
      <tbody></tbody>
    </table>`);
  const $ = (id) => document.getElementById(id);
  const state = { mayList: false, mayUpload: false, mayDelete: false, projectId: 0, folder: "", files: [], quota: null, status: null, confirm: "" };

  const base = () => (state.projectId ? `/v2/project/${state.projectId}` : "/v2/company");

  function say(key, params = {}) {
    state.status = { key, params };
    $("files-status").textContent = t(key, params);
  }

  async function show(projectId, folder = "") {
    state.projectId = projectId;
    state.folder = folder;
    state.status = null;
    state.confirm = "";
    $("files-status").textContent = "";
    $("file-table").tBodies[0].replaceChildren();
    state.files = [];
    state.quota = null;
    $("quota-bars").replaceChildren();
    try {
      const [access] = await Promise.all([projectAccess(projectId), setProjectTitle(projectId, "files")]);
      const space = projectId ? "/v2/project/{project_id}" : "/v2/company";
      state.mayList = access.can("GET", space + "/files");
      state.mayUpload = access.can("POST", space + "/file");
      state.mayDelete = access.can("DELETE", space + "/file");
      // A space the user's roles do not open is said so, not asked for.
      if (state.mayList) await load();
      else say(projectId ? "noProjectFiles" : "noCompanyFiles");
    } catch (err) {
      showError(err);
    }
    render();
  }

  async function load() {
    const files = [];
    for (let page = 1; ; page++) {
      const answer = await get(`${base()}/files`, { page, per_page: 1000 });
      files.push(...answer.items);
      if (page >= answer.meta.total_pages) break;
    }
    state.files = files;
    state.quota = (await get(`${base()}/quota`)).files;
  }

  function render() {
    $("quota-heading").textContent = t("quota");
    $("new-folder-label").textContent = t("newFolderName");
    $("new-folder-go").textContent = t("newFolder");
    $("drop-text").textContent = t("dropHere");
    $("choose-text").textContent = t("chooseFiles");
    $("fcol-name").textContent = t("colFile");
    $("fcol-size").textContent = t("colSize");
    $("fcol-mod").textContent = t("colModified");
    $("fcol-act").textContent = t("colActions");
    if (state.status) $("files-status").textContent = t(state.status.key, state.status.params);
    // Uploads and deletes only for users whose roles grant them.
    section.querySelector(".file-tools").hidden = !state.mayUpload;
    section.querySelector(".quota").hidden = !state.quota;
    $("file-table").hidden = !state.mayList;
    $("folder-path").hidden = !state.mayList;
    $("drop").hidden = !state.mayUpload;
    renderQuota();
    renderPath();
    renderList();
  }

  function renderQuota() {
    const q = state.quota;
    if (!q) return;
    const bar = (id, label, used, limit) => {
      const wrap = document.createElement("div");
      wrap.className = "bar";
      const l = document.createElement("label");
      l.htmlFor = id;
      l.textContent = label;
      const m = document.createElement("meter");
      m.id = id;
      m.min = 0;
      m.max = Math.max(1, limit);
      m.value = used;
      m.high = limit * 0.8;
      m.optimum = 0;
      m.textContent = `${used} / ${limit}`;
      wrap.append(l, m);
      return wrap;
    };
    $("quota-bars").replaceChildren(
      bar("quota-files", t("quotaFiles", { used: formatNumber(q.quota_used.files), limit: formatNumber(q.quota_limits.files) }),
        q.quota_used.files, q.quota_limits.files),
      bar("quota-bytes", t("quotaBytes", { used: bytes(q.quota_used.space_bytes), limit: bytes(q.quota_limits.space_bytes) }),
        q.quota_used.space_bytes, q.quota_limits.space_bytes),
    );
  }

  function renderPath() {
    const nav = $("folder-path");
    nav.setAttribute("aria-label", t("folderPath"));
    const parts = state.folder ? state.folder.split("/") : [];
    const items = [crumb(t("topFolder"), "", parts.length === 0)];
    parts.forEach((p, i) => items.push(document.createTextNode(" / "), crumb(p, parts.slice(0, i + 1).join("/"), i === parts.length - 1)));
    nav.replaceChildren(...items);
  }

  function crumb(label, folder, current) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "link";
    b.textContent = label;
    if (current) b.setAttribute("aria-current", "location");
    b.addEventListener("click", () => openFolder(folder));
    return b;
  }

  function openFolder(folder) {
    state.folder = folder;
    state.confirm = "";
    renderPath();
    renderList();
    $("folder-path").querySelector("[aria-current]").focus();
  }

  // What the folder holds: its subfolders (from deeper paths) and files.
  function contents() {
    const prefix = state.folder ? state.folder + "/" : "";
    const folders = new Set();
    const files = [];
    for (const f of state.files) {
      if (!f.path.startsWith(prefix)) continue;
      const rest = f.path.slice(prefix.length);
      const slash = rest.indexOf("/");
      if (slash >= 0) folders.add(rest.slice(0, slash));
      else files.push({ ...f, name: rest });
    }
    return { folders: [...folders].sort(), files };
  }

  function renderList() {
    const { folders, files } = contents();
    const body = $("file-table").tBodies[0];
    const rows = [];
    for (const name of folders) {
      const tr = document.createElement("tr");
      tr.dataset.folder = name;
      const b = document.createElement("button");
      b.type = "button";
      b.className = "link";
      b.textContent = name + "/";
      b.setAttribute("aria-label", t("openFolder", { name }));
      b.addEventListener("click", () => openFolder(state.folder ? `${state.folder}/${name}` : name));
      const th = document.createElement("th");
      th.scope = "row";
      th.append(b);
      tr.append(th, td(""), td(""), td(""));
      rows.push(tr);
    }
    for (const f of files) rows.push(fileRow(f));
    if (rows.length === 0) {
      const tr = document.createElement("tr");
      const c = td(t("noFiles"));
      c.colSpan = 4;
      tr.append(c);
      rows.push(tr);
    }
    body.replaceChildren(...rows);
    $("file-table").dataset.count = String(files.length);
  }

  function fileRow(f) {
    const tr = document.createElement("tr");
    tr.dataset.path = f.path;
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = f.name;
    const actions = document.createElement("td");
    actions.className = "actions";
    if (state.confirm === f.path) {
      const q = document.createElement("span");
      q.textContent = t("confirmDelete", { name: f.name }) + " ";
      q.id = "confirm-text";
      const yes = button(t("yesDelete"), "confirm-delete", () => remove(f));
      yes.setAttribute("aria-describedby", "confirm-text");
      const no = button(t("cancel"), "cancel-delete", () => {
        state.confirm = "";
        renderList();
      });
      actions.append(q, yes, " ", no);
      queueMicrotask(() => yes.focus());
    } else {
      const dl = button(t("download"), "download", () => download(f));
      dl.setAttribute("aria-label", t("downloadOf", { name: f.name }));
      const del = button(t("deleteFile"), "delete", () => {
        state.confirm = f.path;
        renderList();
      });
      del.setAttribute("aria-label", t("deleteOf", { name: f.name }));
      actions.append(dl);
      if (state.mayDelete) actions.append(" ", del);
    }
    tr.append(th, td(bytes(f.size_bytes)), td(formatTime(Date.parse(f.last_modified))), actions);
    return tr;
  }

  async function download(f) {
    try {
      const link = await get(`${base()}/file`, { path: f.path });
      const tr = $("file-table").querySelector(`tr[data-path="${CSS.escape(f.path)}"]`);
      if (tr) tr.dataset.link = link.download_link;
      // The link is the object store's, another origin: the browser
      // fetches it as a navigation in a new tab and saves it.
      const a = document.createElement("a");
      a.href = link.download_link;
      a.target = "_blank";
      a.rel = "noopener";
      a.download = f.name;
      document.body.append(a);
      a.click();
      a.remove();
      say("linkReady", { name: f.name });
    } catch (err) {
      showError(err);
    }
  }

  async function remove(f) {
    state.confirm = "";
    try {
      await request("DELETE", `${base()}/file`, { params: { path: f.path } });
      say("deleted", { name: f.name });
      await load();
    } catch (err) {
      showError(err);
    }
    render();
    $("folder-path").querySelector("[aria-current]").focus();
  }

  async function upload(list) {
    for (const file of list) {
      say("uploading", { name: file.name });
      const form = new FormData();
      form.append("file", file, file.name);
      const q = state.folder ? "?folder=" + encodeURIComponent(state.folder) : "";
      try {
        await postForm(`${base()}/file${q}`, form);
        say("uploaded", { name: file.name });
      } catch (err) {
        showError(err);
        break;
      }
    }
    try {
      await load();
    } catch (err) {
      showError(err);
    }
    render();
  }

  $("new-folder-go").addEventListener("click", () => {
    const name = $("new-folder").value.trim();
    if (!name || name.includes("/") || name === "." || name === "..") {
      say("badFolder");
      return;
    }
    $("new-folder").value = "";
    openFolder(state.folder ? `${state.folder}/${name}` : name);
  });
  $("file-input").addEventListener("change", (ev) => {
    upload([...ev.target.files]);
    ev.target.value = "";
  });
  const drop = $("drop");
  drop.addEventListener("dragover", (ev) => {
    ev.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (ev) => {
    ev.preventDefault();
    drop.classList.remove("over");
    if (ev.dataTransfer && ev.dataTransfer.files.length) upload([...ev.dataTransfer.files]);
  });
  // Enter or space on the drop zone opens the file chooser.
  drop.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" || ev.key === " ") {
      ev.preventDefault();
      $("file-input").click();
    }
  });
  onLangChange(() => {
    if (!section.hidden) render();
  });

  return { show };
}

// postForm sends a multipart form with the bearer token.
async function postForm(path, form) {
  let res;
  try {
    res = await fetch(path, { method: "POST", body: form, headers: { Authorization: "Bearer " + token() }, credentials: "omit", cache: "no-store" });
  } catch (err) {
    throw new ApiError(0, err.message || String(err));
  }
  if (res.ok) return res.json();
  let msg = res.statusText || "HTTP " + res.status;
  try {
    const body = await res.json();
    if (body && typeof body.error === "string") msg = body.error;
  } catch {
    // Not the JSON envelope.
  }
  throw new ApiError(res.status, msg, parseInt(res.headers.get("Retry-After") || "0", 10) || 0);
}

function button(label, cls, fn) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = cls;
  b.textContent = label;
  b.addEventListener("click", fn);
  return b;
}

function td(s) {
  const c = document.createElement("td");
  c.textContent = s;
  return c;
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${formatNumber(i === 0 ? v : Math.round(v * 10) / 10)} ${units[i]}`;
}
