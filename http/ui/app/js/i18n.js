// English and German for the browser UI. Every text a person reads comes
// from here, looked up by key; the API's own messages (the envelope's
// error) are shown as the API wrote them, in English.

const dict = {
  en: {
    skip: "Skip to content",
    language: "Language",
    apiExplorer: "API explorer",
    projects: "Projects",
    signIn: "Sign in",
    signOut: "Sign out",
    email: "Email",
    password: "Password",
    signingIn: "Signing in…",
    signedInAs: "Signed in as {name}",
    waitSeconds: "Too many sign-in attempts: wait {n} s before trying again.",
    sessionEnded: "Your session has ended; sign in again.",
    apiError: "The API answered: {error}",
    networkError: "The server could not be reached: {error}",
    noProjects: "You have no projects yet.",
    projectsLoaded: "{n} projects",
    datapoints: "Datapoints",
    search: "Search by name, tag or unit",
    datapointCount: "{shown} of {total} datapoints",
    colPlot: "Plot",
    colName: "Name",
    colUnit: "Unit",
    colTags: "Tags",
    colLast: "Last value",
    plotThis: "Plot {name}",
    showMore: "Show more",
    noUnit: "no unit",
    plot: "Plot",
    timeRange: "Time range",
    lastHour: "Last hour",
    lastDay: "Last day",
    lastWeek: "Last week",
    lastMonth: "Last month",
    custom: "Custom",
    from: "From",
    to: "To",
    apply: "Apply",
    earlier: "Earlier",
    later: "Later",
    zoomOut: "Zoom out",
    aggregation: "Aggregation",
    aggMean: "mean",
    aggMin: "minimum",
    aggMax: "maximum",
    downloadCsv: "Download CSV",
    time: "Time",
    plotEmpty: "Choose datapoints in the list to plot them.",
    plotLoading: "Loading…",
    plotRaw: "{n} points per series, as stored, drawn in {ms} ms.",
    plotSampled: "{n} points per series, {agg} over {rate}, drawn in {ms} ms.",
    plotNoData: "No observations in this time range.",
    plotLabel: "Plot of {names} from {from} to {to}",
    tooManyUnits: "A plot shows two units at most: {name} ({unit}) is not plotted.",
    badRange: "The start of the range must be before its end.",
    zoomHint: "Drag across the plot to zoom in; double-click to zoom out to the loaded range.",
  },
  de: {
    skip: "Zum Inhalt springen",
    language: "Sprache",
    apiExplorer: "API-Explorer",
    projects: "Projekte",
    signIn: "Anmelden",
    signOut: "Abmelden",
    email: "E-Mail",
    password: "Passwort",
    signingIn: "Anmeldung läuft…",
    signedInAs: "Angemeldet als {name}",
    waitSeconds: "Zu viele Anmeldeversuche: bitte {n} s warten.",
    sessionEnded: "Ihre Sitzung ist abgelaufen; bitte erneut anmelden.",
    apiError: "Die API antwortete: {error}",
    networkError: "Der Server ist nicht erreichbar: {error}",
    noProjects: "Sie haben noch keine Projekte.",
    projectsLoaded: "{n} Projekte",
    datapoints: "Datenpunkte",
    search: "Suche nach Name, Tag oder Einheit",
    datapointCount: "{shown} von {total} Datenpunkten",
    colPlot: "Plot",
    colName: "Name",
    colUnit: "Einheit",
    colTags: "Tags",
    colLast: "Letzter Wert",
    plotThis: "{name} plotten",
    showMore: "Mehr anzeigen",
    noUnit: "keine Einheit",
    plot: "Diagramm",
    timeRange: "Zeitraum",
    lastHour: "Letzte Stunde",
    lastDay: "Letzter Tag",
    lastWeek: "Letzte Woche",
    lastMonth: "Letzter Monat",
    custom: "Benutzerdefiniert",
    from: "Von",
    to: "Bis",
    apply: "Anwenden",
    earlier: "Früher",
    later: "Später",
    zoomOut: "Herauszoomen",
    aggregation: "Aggregation",
    aggMean: "Mittelwert",
    aggMin: "Minimum",
    aggMax: "Maximum",
    downloadCsv: "CSV herunterladen",
    time: "Zeit",
    plotEmpty: "Wählen Sie Datenpunkte in der Liste, um sie zu plotten.",
    plotLoading: "Wird geladen…",
    plotRaw: "{n} Punkte je Reihe, wie gespeichert, gezeichnet in {ms} ms.",
    plotSampled: "{n} Punkte je Reihe, {agg} über {rate}, gezeichnet in {ms} ms.",
    plotNoData: "Keine Beobachtungen in diesem Zeitraum.",
    plotLabel: "Diagramm von {names} von {from} bis {to}",
    tooManyUnits: "Ein Diagramm zeigt höchstens zwei Einheiten: {name} ({unit}) wird nicht geplottet.",
    badRange: "Der Beginn des Zeitraums muss vor seinem Ende liegen.",
    zoomHint: "Ziehen Sie über das Diagramm, um hineinzuzoomen; Doppelklick zeigt wieder den geladenen Zeitraum.",
  },
};

export const languages = Object.keys(dict);

// addStrings adds the texts of a view kept in its own module, as
// {en: {...}, de: {...}}; modules call it when they load, before apply.
export function addStrings(more) {
  for (const [l, texts] of Object.entries(more)) Object.assign(dict[l], texts);
}

// The one mutable piece of i18n state: the language in force, kept in
// localStorage (it is a preference, not a secret).
let current = pick(localStorage.getItem("bdp.lang") || navigator.language);
const listeners = [];

function pick(tag) {
  const base = String(tag || "").slice(0, 2).toLowerCase();
  return dict[base] ? base : "en";
}

export function lang() {
  return current;
}

// locale is the BCP 47 tag for Intl formatting.
export function locale() {
  return current === "de" ? "de-DE" : "en-GB";
}

// t looks key up in the current language; {name} placeholders are filled
// from params. An unknown key is returned as it is, so a gap shows.
export function t(key, params = {}) {
  const s = dict[current][key] ?? dict.en[key] ?? key;
  return s.replace(/\{(\w+)\}/g, (m, k) => (k in params ? String(params[k]) : m));
}

// apply translates the static texts below root: data-i18n sets the text,
// data-i18n-label the aria-label, data-i18n-placeholder the placeholder.
export function apply(root = document) {
  document.documentElement.lang = current;
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-label]")) el.setAttribute("aria-label", t(el.dataset.i18nLabel));
  for (const el of root.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = t(el.dataset.i18nPlaceholder);
}

// setLang switches the language, translates the page and tells the views,
// which render their dynamic texts again.
export function setLang(l) {
  current = pick(l);
  localStorage.setItem("bdp.lang", current);
  apply();
  for (const fn of listeners) fn(current);
}

export function onLangChange(fn) {
  listeners.push(fn);
}

export function formatNumber(v) {
  if (v == null || Number.isNaN(v)) return "–";
  return new Intl.NumberFormat(locale(), { maximumFractionDigits: 3 }).format(v);
}

export function formatTime(ms) {
  return new Intl.DateTimeFormat(locale(), { dateStyle: "medium", timeStyle: "medium" }).format(new Date(ms));
}
