// What the signed-in user may do in a project, decided from the API as
// the server decides it: the endpoint grants of the user's roles (GET
// /v2/user: project roles with authed_endpoints and TagAuths, company
// roles) against the endpoint catalog (GET /v2/meta/endpoints: ids by
// method and path). The UI hides write actions the API would refuse; the
// API stays the judge (a hidden button is a courtesy, not a guard).

import { get } from "./api.js";

let catalog = null; // Promise of Map "METHOD path" -> id
let userAnswer = null; // Promise of GET /v2/user

function loadCatalog() {
  if (!catalog) {
    catalog = get("/v2/meta/endpoints").then((list) => new Map(list.map((e) => [`${e.request_method} ${e.path}`, e.id])));
    catalog.catch(() => {
      catalog = null;
    });
  }
  return catalog;
}

function loadUser() {
  if (!userAnswer) {
    userAnswer = get("/v2/user");
    userAnswer.catch(() => {
      userAnswer = null;
    });
  }
  return userAnswer;
}

// forget drops what was read, at sign-out (the next user has other roles).
export function forget() {
  catalog = null;
  userAnswer = null;
}

// projectAccess answers {can(method, path), write} for a project: can
// tells whether a role grants the endpoint there, write whether some
// TagAuth (or a company role) lets the user write any datapoint of it.
export async function projectAccess(projectId) {
  const [ids, u] = await Promise.all([loadCatalog(), loadUser()]);
  const company = u.companyroles || [];
  const roles = (u.roles || []).filter((r) => r.project_id === projectId);
  const granted = (role) => (id) => (role.authed_endpoints || []).some((e) => e === 0 || e === id);
  return {
    can(method, path) {
      const id = ids.get(`${method} ${path}`);
      if (id === undefined) return false;
      return company.some((r) => granted(r)(id)) || roles.some((r) => granted(r)(id));
    },
    write: company.length > 0 || roles.some((r) => (r.authed_tags || []).some((tag) => tag.write)),
    read: company.length > 0 || roles.some((r) => (r.authed_tags || []).some((tag) => tag.read)),
  };
}

// hideUnless hides every element below root with data-needs="METHOD path"
// the access does not grant, and those with data-needs-write when the
// user may write nothing.
export function hideUnless(root, access) {
  for (const el of root.querySelectorAll("[data-needs]")) {
    const [method, path] = el.dataset.needs.split(" ");
    el.hidden = !access.can(method, path) || ("needsWrite" in el.dataset && !access.write);
  }
}
