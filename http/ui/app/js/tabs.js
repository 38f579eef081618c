// The pages of a project beyond its datapoints and plots (analytics,
// files, ...): each is a section of <main>, made here, headed by the
// project's name and the links between the project's pages. Routes are
// fragments: #/project/3 (datapoints and plots), #/project/3/analytics,
// #/project/3/files, #/files (the company's files).

import { get } from "./api.js";
import { t, addStrings, onLangChange } from "./i18n.js";

addStrings({
  en: {
    projectPages: "Pages of the project",
    pagePlots: "Datapoints and plots",
    pageAnalytics: "Analytics",
    pageFiles: "Files",
    companyFiles: "Company files",
    titleAnalytics: "Analytics: {project}",
    titleResult: "Analysis result: {project}",
    titleFiles: "Files: {project}",
  },
  de: {
    projectPages: "Seiten des Projekts",
    pagePlots: "Datenpunkte und Diagramme",
    pageAnalytics: "Analysen",
    pageFiles: "Dateien",
    companyFiles: "Firmendateien",
    titleAnalytics: "Analysen: {project}",
    titleResult: "Analyseergebnis: {project}",
    titleFiles: "Dateien: {project}",
  },
});

const pages = [
  { key: "pagePlots", suffix: "" },
  { key: "navVdp", suffix: "/vdp" }, // vdp.js, setpoints.js, apps.js (texts: opsstrings.js)
  { key: "navSetpoints", suffix: "/setpoints" },
  { key: "navApps", suffix: "/apps" },
  { key: "pageAnalytics", suffix: "/analytics" },
  { key: "pageFiles", suffix: "/files" },
];
const names = new Map(); // project id -> name
const titles = new Map(); // section name -> {projectId, key}

// tabsFor makes the project's page links; current is the page's suffix.
function tabsFor(section, current) {
  const nav = document.createElement("nav");
  nav.className = "tabs";
  nav.setAttribute("aria-label", t("projectPages"));
  nav.dataset.current = current;
  section.querySelector("h1").after(nav);
  return nav;
}

export function renderTabs(nav, projectId) {
  nav.setAttribute("aria-label", t("projectPages"));
  nav.replaceChildren(...pages.map((p) => {
    const a = document.createElement("a");
    a.href = `#/project/${projectId}${p.suffix}`;
    a.textContent = t(p.key);
    if (p.suffix === nav.dataset.current) a.setAttribute("aria-current", "page");
    return a;
  }));
}

// projectSection makes the section view-{name} with the given inner HTML
// below its heading and the project's page links.
export function projectSection(name, html) {
  const section = document.createElement("section");
  section.id = "view-" + name;
  section.hidden = true;
  section.setAttribute("aria-labelledby", name + "-title");
  section.innerHTML = `<h1 id="${name}-title" tabindex="-1"></h1>` + html;
  document.getElementById("main").append(section);
  section.tabs = tabsFor(section, { analytics: "/analytics", result: "/analytics", files: "/files" }[name] || "");
  return section;
}

// setProjectTitle heads section view-{name} with the project's name and
// points its page links at the project (projectId 0: the company).
export async function setProjectTitle(projectId, name) {
  const section = document.getElementById("view-" + name);
  titles.set(name, projectId);
  section.tabs.hidden = !projectId;
  if (projectId) renderTabs(section.tabs, projectId);
  if (projectId && !names.has(projectId)) {
    const p = await get(`/v2/project/${projectId}`);
    names.set(projectId, p.name);
  }
  renderTitle(name);
}

function renderTitle(name) {
  const projectId = titles.get(name);
  const h1 = document.getElementById(name + "-title");
  const key = { analytics: "titleAnalytics", result: "titleResult", files: "titleFiles" }[name];
  h1.textContent = projectId ? t(key, { project: names.get(projectId) || "#" + projectId }) : t("companyFiles");
}

// The page links of the datapoints and plots page, beside theirs.
let plotTabs = null;
export function showPlotTabs(projectId) {
  if (!plotTabs) plotTabs = tabsFor(document.getElementById("view-project"), "");
  renderTabs(plotTabs, projectId);
  plotTabs.dataset.project = projectId;
}

onLangChange(() => {
  for (const name of titles.keys()) {
    const section = document.getElementById("view-" + name);
    if (titles.get(name)) renderTabs(section.tabs, titles.get(name));
    renderTitle(name);
  }
  if (plotTabs && plotTabs.dataset.project) renderTabs(plotTabs, Number(plotTabs.dataset.project));
});
