// Live values: observations arrive as the platform stores them, over MQTT
// over WebSocket, the way an integrator would get them. For each open
// project the UI creates itself a short-lived read MQTT user through the
// API (POST /v2/project/{id}/mqttuser, random name and password, valid
// 15 minutes, renewed by PUT while the project is open, deleted when it is
// left), learns the broker's WebSocket address from GET /v2/meta/mqtt and
// subscribes to the topics of the datapoints on screen (the list's rows and
// the plotted series), not to the whole project: the broker then encodes
// and sends only what is shown.

import "./opsstrings.js";
import { get, request } from "./api.js";
import { connect, datapointTopic, datapointOf } from "./mqttws.js";
import { t, onLangChange } from "./i18n.js";

const validity = 900; // seconds an MQTT user lives without renewal
const renewEvery = 600 * 1000;

export function createLive() {
  const el = { status: document.getElementById("live-status") };
  const state = {
    projectId: 0,
    generation: 0, // the newest open(); older sessions stop
    user: null, // {id, username, password}
    client: null,
    subscribed: new Set(), // topics
    watched: new Map(), // kind -> Set of dataPointIDs
    renew: 0,
    retry: 0,
    retryDelay: 1000,
    statusKey: "",
    statusParams: {},
  };
  const listeners = [];

  function setStatus(key, params = {}) {
    state.statusKey = key;
    state.statusParams = params;
    if (!el.status) return;
    el.status.textContent = key ? t(key, params) : "";
    el.status.dataset.state = key;
  }

  function wanted() {
    const topics = new Set();
    for (const ids of state.watched.values()) for (const id of ids) topics.add(datapointTopic(state.projectId, id));
    return topics;
  }

  // sync brings the broker's subscriptions in line with what is shown.
  async function sync() {
    const c = state.client;
    if (!c || !c.open) return;
    const want = wanted();
    const add = [...want].filter((x) => !state.subscribed.has(x));
    const drop = [...state.subscribed].filter((x) => !want.has(x));
    for (const x of add) state.subscribed.add(x);
    for (const x of drop) state.subscribed.delete(x);
    try {
      // SUBSCRIBE packets stay small: at most 100 filters each.
      for (let i = 0; i < add.length; i += 100) await c.subscribe(add.slice(i, i + 100));
      for (let i = 0; i < drop.length; i += 100) await c.unsubscribe(drop.slice(i, i + 100));
      // What the tests wait for: the topics the broker acknowledged.
      if (el.status) el.status.dataset.subscribed = [...state.subscribed].join("\n");
    } catch (err) {
      setStatus("liveError", { error: err.message });
    }
  }

  async function open(projectId, allowed) {
    await close();
    const gen = ++state.generation;
    state.projectId = projectId;
    state.retryDelay = 1000;
    if (!allowed) {
      setStatus("liveNotAllowed");
      return;
    }
    await start(gen);
  }

  async function start(gen) {
    setStatus("liveConnecting");
    try {
      const meta = await get("/v2/meta/mqtt");
      const kind = location.protocol === "https:" ? "websocket_tls" : "websocket";
      const ws = meta.listeners.find((l) => l.transport === kind);
      if (!ws) {
        setStatus("liveNoBroker");
        return;
      }
      if (gen !== state.generation) return;
      if (!state.user) state.user = await createUser(gen);
      if (gen !== state.generation) return;
      const client = await connect({
        url: ws.url,
        username: state.user.username,
        password: state.user.password,
        clientId: "bdp-ui-" + randomText(12),
        onMessage: (topic, payload) => deliver(topic, payload),
        onClose: (err) => {
          if (gen !== state.generation) return;
          state.client = null;
          state.subscribed.clear();
          if (err) reconnect(gen, err);
        },
      });
      if (gen !== state.generation) {
        client.close();
        return;
      }
      state.client = client;
      state.retryDelay = 1000;
      clearInterval(state.renew);
      state.renew = setInterval(() => renewUser(gen), renewEvery);
      await sync();
      if (gen === state.generation) setStatus("liveOn"); // on once the broker took the subscriptions
    } catch (err) {
      if (gen !== state.generation) return;
      if (err.status === 403) {
        setStatus("liveNotAllowed");
        return;
      }
      // A refused login means the user is gone (expired): a new one next.
      if (err.code === 4 || err.code === 5) state.user = null;
      reconnect(gen, err);
    }
  }

  function reconnect(gen, err) {
    setStatus("liveRetry", { error: err.message, s: Math.round(state.retryDelay / 1000) });
    clearTimeout(state.retry);
    state.retry = setTimeout(() => {
      if (gen === state.generation) start(gen);
    }, state.retryDelay);
    state.retryDelay = Math.min(30000, state.retryDelay * 2);
  }

  async function createUser() {
    const username = "bdp-ui-" + randomText(16);
    const password = randomText(32);
    const answer = await request("POST", `/v2/project/${state.projectId}/mqttuser`, {
      body: { username, password, rights: "read", validity, description: "bdp browser UI: live values of one tab" },
    });
    return { id: answer.resource.id, username, password };
  }

  async function renewUser(gen) {
    const u = state.user;
    if (!u || gen !== state.generation) return;
    try {
      await request("PUT", `/v2/project/${state.projectId}/mqttuser/${u.id}`, { body: { validity } });
    } catch {
      state.user = null; // gone: the next connection makes a new one
    }
  }

  function deliver(topic, payload) {
    const id = datapointOf(topic);
    if (!id) return;
    const receivedAt = Date.now();
    let obs;
    try {
      obs = JSON.parse(payload);
    } catch {
      return;
    }
    for (const o of Array.isArray(obs) ? obs : [obs]) {
      const time = Date.parse(o.time);
      if (!Number.isFinite(time) || typeof o.value !== "number") continue;
      for (const fn of listeners) fn(id, time, o.value, receivedAt);
    }
  }

  // close ends the session and deletes the MQTT user (it would expire by
  // itself; deleting it closes the door at once).
  async function close() {
    state.generation++;
    clearInterval(state.renew);
    clearTimeout(state.retry);
    if (state.client) state.client.close();
    state.client = null;
    state.subscribed.clear();
    const u = state.user;
    state.user = null;
    setStatus("");
    if (u && state.projectId) {
      try {
        await request("DELETE", `/v2/project/${state.projectId}/mqttuser/${u.id}`);
      } catch {
        // expires by itself
      }
    }
  }

  onLangChange(() => setStatus(state.statusKey, state.statusParams));

  return {
    open,
    close,
    // watch sets the dataPointIDs a part of the page shows ("list",
    // "plot"); the subscriptions follow.
    watch(kind, ids) {
      state.watched.set(kind, new Set(ids));
      sync();
    },
    onValue(fn) {
      listeners.push(fn);
    },
  };
}

function randomText(n) {
  const bytes = crypto.getRandomValues(new Uint8Array(n));
  return Array.from(bytes, (b) => "abcdefghijklmnopqrstuvwxyz0123456789"[b % 36]).join("");
}
