// The one way the UI talks to bdp: the public /v2 API with a bearer token.
//
// The token lives in sessionStorage, so it is kept for this tab only and
// dies with it; it is never put into a URL (addresses end up in histories
// and logs). Requests go with credentials "omit": the token is sent by hand,
// and without credentials the browser never opens its own password dialog
// on a 401 that carries a Basic challenge.

const tokenKey = "bdp.token";

// ApiError is a failed request: status is the HTTP status (0 when the
// server was not reached), message the envelope's error as the API wrote
// it, retryAfter the seconds from Retry-After (0 when absent).
export class ApiError extends Error {
  constructor(status, message, retryAfter = 0) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

export function token() {
  try {
    const t = JSON.parse(sessionStorage.getItem(tokenKey) || "null");
    if (t && t.token && t.expires > Date.now()) return t.token;
  } catch {
    // A value not written by this code is treated as no token.
  }
  return "";
}

export function signedIn() {
  return token() !== "";
}

export function forgetToken() {
  sessionStorage.removeItem(tokenKey);
}

// Called with the ApiError when a signed-in request answers 401: the token
// expired or the password changed.
let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

// signIn trades email and password for a token (the OAuth2 password grant
// of POST /v2/auth/token) and keeps it.
export async function signIn(email, password) {
  const body = new URLSearchParams({ grant_type: "password", username: email, password });
  const res = await send("/v2/auth/token", {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body,
  });
  const answer = await res.json();
  // expires_in is the token's life in seconds; a minute is kept in hand so
  // a request never leaves with a token about to expire.
  const expires = Date.now() + Math.max(0, answer.expires_in - 60) * 1000;
  sessionStorage.setItem(tokenKey, JSON.stringify({ token: answer.access_token, expires }));
}

// get reads a JSON answer of GET path with query params (undefined values
// are left out).
export async function get(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) q.append(k, String(v));
  const qs = q.toString();
  const res = await send(path + (qs ? "?" + qs : ""), { headers: { Authorization: "Bearer " + token() } });
  return res.json();
}

// request sends method to path with query params (undefined values are
// left out) and, when body is given, body as JSON; it answers the JSON
// answer (null for an empty one).
export async function request(method, path, { params = {}, body } = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) q.append(k, String(v));
  const qs = q.toString();
  const headers = { Authorization: "Bearer " + token() };
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await send(path + (qs ? "?" + qs : ""), init);
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

async function send(url, init) {
  let res;
  try {
    res = await fetch(url, { ...init, credentials: "omit", cache: "no-store" });
  } catch (err) {
    throw new ApiError(0, err.message || String(err));
  }
  if (res.ok) return res;
  let message = res.statusText || "HTTP " + res.status;
  try {
    const body = await res.json();
    if (body && typeof body.error === "string") message = body.error;
  } catch {
    // Not the JSON envelope (a proxy's page): the status text stands.
  }
  const err = new ApiError(res.status, message, parseInt(res.headers.get("Retry-After") || "0", 10) || 0);
  if (res.status === 401 && init.headers && init.headers.Authorization) onUnauthorized(err);
  throw err;
}
