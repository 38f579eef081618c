// Small helpers for the views that build their page in code (vdp.js,
// setpoints.js, apps.js): elements, labelled fields, and the API's
// validation errors shown at the field they concern.

import { t } from "./i18n.js";
import { renderTabs } from "./tabs.js";

// h makes an element: attrs are properties (class as className, data-*
// and aria-* as attributes), children nodes or text.
export function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("data-") || k.startsWith("aria-") || k === "role" || k === "for" || k === "list") e.setAttribute(k, v === true ? "" : v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e[k] = v;
  }
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

let uid = 0;

// field is a label and a control (an input or select made by make(id)),
// with a place for its error; field names the API's error prefix it
// answers for (config.pins.P1.data_range.time).
export function field(label, make, apiField = "") {
  const id = "f" + ++uid;
  const control = make(id);
  const err = h("p", { class: "field-error", id: id + "-err", hidden: true });
  if (apiField) control.dataset.field = apiField;
  return h("div", { class: "field" }, h("label", { for: id }, label), control, err);
}

export function input(attrs = {}) {
  return (id) => h("input", { id, ...attrs });
}

export function select(options, attrs = {}) {
  return (id) => {
    const { value, ...rest } = attrs;
    const e = h("select", { id, ...rest }, options.map(([v, text]) => h("option", { value: v }, text)));
    if (value !== undefined) e.value = value;
    return e;
  };
}

// clearErrors removes the field errors below root.
export function clearErrors(root) {
  for (const c of root.querySelectorAll("[aria-invalid]")) {
    c.removeAttribute("aria-invalid");
    c.removeAttribute("aria-describedby");
  }
  for (const p of root.querySelectorAll(".field-error")) {
    p.hidden = true;
    p.textContent = "";
  }
}

// showFieldError puts the API's message at the field whose data-field is
// the longest prefix of it (config.pins.P1.data_range.time: ... at the
// pin's window), and focuses that field; answers false when no field
// fits, so the caller shows it for the whole form.
export function showFieldError(root, message) {
  let best = null;
  for (const c of root.querySelectorAll("[data-field]")) {
    const f = c.dataset.field;
    const fits = message.startsWith(f) && /^[:. ]/.test(message.slice(f.length) || " ");
    const named = !message.startsWith("config") && f === "dataPointID" && /dataPointID/.test(message);
    if ((fits || named) && (!best || f.length > best.dataset.field.length)) best = c;
  }
  if (!best || best.closest("[hidden]")) return false;
  const err = document.getElementById(best.id + "-err");
  err.textContent = message;
  err.hidden = false;
  best.setAttribute("aria-invalid", "true");
  best.setAttribute("aria-describedby", err.id);
  best.focus();
  return true;
}

// apiMessage is an error as the page shows it: the envelope's words.
export function apiMessage(err) {
  if (err && err.status === 0) return t("networkError", { error: err.message });
  return t("apiError", { error: err && err.message ? err.message : String(err) });
}

// attempt runs an action, saying in msg that it is under way and, when it
// fails, the API's words; it answers whether the action succeeded (msg is
// then empty).
export async function attempt(msg, fn) {
  msg.className = "";
  msg.textContent = t("working");
  try {
    await fn();
  } catch (err) {
    msg.className = "error";
    msg.textContent = apiMessage(err);
    return false;
  }
  msg.textContent = "";
  return true;
}

// localInput writes ms as a datetime-local input's value.
export function localInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 16);
}

// projectTabs is the project's page links (tabs.js) for a page of its
// own, current being its fragment suffix ("/vdp").
export function projectTabs(projectId, current) {
  const nav = h("nav", { class: "tabs", "data-current": current });
  renderTabs(nav, projectId);
  return nav;
}
