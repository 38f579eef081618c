// Start-up of the browser UI: which view shows (sign-in, projects, one
// project), the header, and errors. The view follows the address's
// fragment (#/projects, #/project/3), so back and forward work and a
// project can be linked; the token is never part of it.

import * as api from "./api.js";
import { t, apply, setLang, lang, onLangChange } from "./i18n.js";
import { createSignIn, describe } from "./signin.js";
import { createProjects } from "./projects.js";
import { createPlot } from "./plot.js";
import { createLive } from "./live.js";
import { projectAccess, forget as forgetAccess } from "./access.js";
import { createVDP } from "./vdp.js";
import { createSetpoints } from "./setpoints.js";
import { createApps } from "./apps.js";
import { createViews } from "./views.js";
import { createAnalytics } from "./analytics.js";
import { createFiles } from "./files.js";
import { showPlotTabs } from "./tabs.js";

const alertBox = document.getElementById("alert");
const who = document.getElementById("who");
const signOutButton = document.getElementById("signout");
const projectsLink = document.getElementById("nav-projects");
const langSelect = document.getElementById("lang");
let lastError = null;
let user = null;

function showError(err) {
  lastError = err;
  alertBox.textContent = describe(err);
  alertBox.hidden = false;
}

function clearError() {
  lastError = null;
  alertBox.textContent = "";
  alertBox.hidden = true;
}

function showView(name) {
  // Views made by other modules (analytics, files) are sections of main too.
  for (const v of document.querySelectorAll("main > section[id^='view-']")) v.hidden = v.id !== "view-" + name;
  const signedIn = name !== "signin";
  document.getElementById("nav-files").hidden = !signedIn;
  signOutButton.hidden = !signedIn;
  projectsLink.hidden = !signedIn;
  who.hidden = !signedIn;
  // Focus moves to the new view's heading, so a screen reader announces it
  // and the keyboard starts there.
  const h = document.querySelector(`#view-${name} h1`);
  if (h && name !== "signin") h.focus();
}

const live = createLive();
const plot = createPlot({ showError, onSeries: (ids) => live.watch("plot", ids) });
const projects = createProjects({
  showError,
  plot,
  onRows: (ids) => live.watch("list", ids),
  openProject: (id) => {
    location.hash = "#/project/" + id;
  },
});
const plotViews = createViews({ showError, plot });
const analytics = createAnalytics({ showError });
const files = createFiles({ showError });
const signIn = createSignIn({ signedIn: () => route(true) });
const opsPages = { vdp: createVDP({ showError, live }), setpoints: createSetpoints({ showError }), apps: createApps({ showError }) };
live.onValue((id, ms, value, receivedAt) => {
  projects.liveValue(id, ms, value);
  plot.live(id, ms, value, receivedAt);
});
let liveProject = 0;

// openLive starts the live values of a project (once, while it stays
// the project shown), when the user's roles allow an MQTT user there.
async function openLive(projectId) {
  if (liveProject === projectId) return;
  liveProject = projectId;
  try {
    const access = await projectAccess(projectId);
    live.open(projectId, access.can("POST", "/v2/project/{project_id}/mqttuser") && access.read);
  } catch (err) {
    showError(err);
  }
}

// route shows the view the fragment names, or the sign-in form when no
// token is kept.
async function route(fresh = false) {
  clearError();
  if (!api.signedIn()) {
    showView("signin");
    signIn.reset();
    return;
  }
  if (fresh || !user) loadUser();
  // A virtual datapoint's live sources are watched only on its page.
  if (!/\/vdp\/./.test(location.hash)) live.watch("vdp", []);
  const a = /^#\/project\/(\d+)\/analytics(?:\/(\d+)\/([0-9a-fA-F-]{36}))?$/.exec(location.hash);
  if (a) {
    showView(a[2] ? "result" : "analytics");
    await (a[2] ? analytics.showResult(Number(a[1]), Number(a[2]), a[3]) : analytics.show(Number(a[1])));
    return;
  }
  const f = /^#\/(?:project\/(\d+)\/)?files$/.exec(location.hash);
  if (f) {
    showView("files");
    await files.show(Number(f[1] || 0));
    return;
  }
  const ops = /^#\/project\/(\d+)\/(vdp|setpoints|apps)(?:\/(.+))?$/.exec(location.hash);
  if (ops) {
    const id = Number(ops[1]);
    showView(ops[2]);
    openLive(id);
    try {
      await opsPages[ops[2]].show(id, ops[3] ? decodeURIComponent(ops[3]) : "", await projectAccess(id));
    } catch (err) {
      showError(err);
    }
    return;
  }
  const m = /^#\/project\/(\d+)/.exec(location.hash);
  if (m) {
    showView("project");
    showPlotTabs(Number(m[1]));
    openLive(Number(m[1]));
    // #/project/3/view/{uuid} is a saved plot view's link. The view
    // opens while the datapoints load (showProject empties the plot
    // before it waits for anything).
    const v = /\/view\/([0-9a-fA-F-]{36})$/.exec(location.hash);
    await Promise.all([projects.showProject(Number(m[1])), plotViews.show(Number(m[1]), v ? v[1] : "")]);
    return;
  }
  if (location.hash !== "#/projects") {
    history.replaceState(null, "", "#/projects");
  }
  showView("projects");
  await projects.showProjects();
}

async function loadUser() {
  try {
    const answer = await api.get("/v2/user");
    user = answer.user;
    renderWho();
  } catch (err) {
    showError(err);
  }
}

function renderWho() {
  if (!user) return;
  const name = [user.firstName, user.lastName].filter(Boolean).join(" ") || user.email;
  who.textContent = t("signedInAs", { name });
}

function signOut(reason) {
  live.close();
  liveProject = 0;
  forgetAccess();
  for (const p of Object.values(opsPages)) p.clear();
  api.forgetToken();
  user = null;
  projects.clear();
  plotViews.clear();
  who.textContent = "";
  history.replaceState(null, "", location.pathname);
  showView("signin");
  signIn.reset(reason);
}

api.setUnauthorizedHandler(() => signOut(t("sessionEnded")));
signOutButton.addEventListener("click", () => signOut());
projectsLink.addEventListener("click", (ev) => {
  ev.preventDefault();
  location.hash = "#/projects";
});
langSelect.value = lang();
langSelect.addEventListener("change", () => setLang(langSelect.value));
onLangChange(() => {
  renderWho();
  if (lastError) alertBox.textContent = describe(lastError);
});
window.addEventListener("hashchange", () => route());

apply();
route();
