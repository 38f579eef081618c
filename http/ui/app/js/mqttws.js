// A small MQTT 3.1.1 client over WebSocket (subprotocol "mqtt"), enough
// for the UI's live values: connect with username and password, subscribe
// and unsubscribe at QoS 0, receive publishes (QoS 1 ones acknowledged),
// keep alive, disconnect. No publishing, no retries of its own: the
// caller (live.js) decides when to connect again. 7 KiB, 3 KiB gzipped;
// npm's mqtt 5.16.0 (MQTT.js) ships its browser build as mqtt.min.js of
// 342 KiB, 105 KiB gzipped: a third of the first-load budget for what a
// subscriber does not need (publishing, QoS 2, MQTT 5, stores).

const enc = new TextEncoder();
const dec = new TextDecoder();

// Packet types (the high nibble of the first byte).
const CONNECT = 1, CONNACK = 2, PUBLISH = 3, PUBACK = 4, SUBSCRIBE = 8, SUBACK = 9,
  UNSUBSCRIBE = 10, UNSUBACK = 11, PINGREQ = 12, PINGRESP = 13, DISCONNECT = 14;

// CONNACK return codes of MQTT 3.1.1 (3.2.2.3), for error messages.
const refusals = {
  1: "unacceptable protocol version",
  2: "identifier rejected",
  3: "server unavailable",
  4: "bad user name or password",
  5: "not authorized",
};

export class MQTTError extends Error {
  constructor(message, code = 0) {
    super(message);
    this.code = code;
  }
}

function str(s) {
  const b = enc.encode(s);
  return [b.length >> 8, b.length & 0xff, ...b];
}

function packet(type, flags, body) {
  const len = [];
  let n = body.length;
  do {
    let byte = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 0x80;
    len.push(byte);
  } while (n > 0);
  return new Uint8Array([(type << 4) | flags, ...len, ...body]);
}

// connect opens a session: url (ws:// or wss://), username, password.
// onMessage(topic, payloadText) gets every publish; onClose(err) is
// called once when the connection ends after it was established (err null
// after close()). Resolves with the client once the broker accepted the
// CONNECT; rejects with an MQTTError otherwise.
export function connect({ url, username, password, clientId, keepAlive = 30, onMessage, onClose }) {
  return new Promise((resolve, reject) => {
    let ws;
    try {
      ws = new WebSocket(url, "mqtt");
    } catch (err) {
      reject(new MQTTError(err.message || String(err)));
      return;
    }
    ws.binaryType = "arraybuffer";
    let buf = new Uint8Array(0);
    let established = false;
    let closedByUs = false;
    let nextId = 1;
    const pending = new Map(); // packet id -> {resolve, reject}
    let ping = 0;

    const send = (bytes) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(bytes);
    };
    const id = () => {
      const v = nextId;
      nextId = nextId === 0xffff ? 1 : nextId + 1;
      return v;
    };
    const finish = (err) => {
      clearInterval(ping);
      for (const p of pending.values()) p.reject(err || new MQTTError("connection closed"));
      pending.clear();
      if (!established) reject(err || new MQTTError("connection closed before the broker answered"));
      else if (onClose) onClose(closedByUs ? null : err || new MQTTError("connection closed"));
      established = false;
    };

    const client = {
      subscribe(filters) {
        if (filters.length === 0) return Promise.resolve([]);
        const pid = id();
        const body = [pid >> 8, pid & 0xff];
        for (const f of filters) body.push(...str(f), 0);
        return request(pid, packet(SUBSCRIBE, 2, body));
      },
      unsubscribe(filters) {
        if (filters.length === 0) return Promise.resolve([]);
        const pid = id();
        const body = [pid >> 8, pid & 0xff];
        for (const f of filters) body.push(...str(f));
        return request(pid, packet(UNSUBSCRIBE, 2, body));
      },
      close() {
        closedByUs = true;
        send(packet(DISCONNECT, 0, []));
        ws.close(1000);
      },
      get open() {
        return established;
      },
    };

    function request(pid, bytes) {
      return new Promise((res, rej) => {
        pending.set(pid, { resolve: res, reject: rej });
        send(bytes);
      });
    }

    ws.onopen = () => {
      const flags = 0x80 | 0x40 | 0x02; // user name, password, clean session
      const body = [...str("MQTT"), 4, flags, keepAlive >> 8, keepAlive & 0xff,
        ...str(clientId), ...str(username), ...str(password)];
      send(packet(CONNECT, 0, body));
    };
    ws.onerror = () => {}; // onclose follows, with the reason
    ws.onclose = (ev) => finish(closedByUs ? null : new MQTTError(`WebSocket closed (${ev.code})`));
    ws.onmessage = (ev) => {
      const chunk = new Uint8Array(ev.data);
      const joined = new Uint8Array(buf.length + chunk.length);
      joined.set(buf);
      joined.set(chunk, buf.length);
      buf = joined;
      // A frame may hold several packets, or part of one.
      for (;;) {
        let len = 0, mul = 1, i = 1;
        for (; i < buf.length && i <= 4; i++) {
          len += (buf[i] & 0x7f) * mul;
          mul *= 128;
          if ((buf[i] & 0x80) === 0) break;
        }
        if (i >= buf.length || buf.length < i + 1 + len) return;
        const first = buf[0];
        const body = buf.subarray(i + 1, i + 1 + len);
        buf = buf.slice(i + 1 + len);
        handle(first >> 4, first & 0x0f, body);
      }
    };

    function handle(type, flags, body) {
      switch (type) {
        case CONNACK: {
          if (body[1] !== 0) {
            closedByUs = true;
            ws.close();
            reject(new MQTTError(`the broker refused the connection: ${refusals[body[1]] || body[1]}`, body[1]));
            return;
          }
          established = true;
          ping = setInterval(() => send(packet(PINGREQ, 0, [])), (keepAlive * 1000) / 2);
          resolve(client);
          return;
        }
        case PUBLISH: {
          const qos = (flags >> 1) & 3;
          const tlen = (body[0] << 8) | body[1];
          const topic = dec.decode(body.subarray(2, 2 + tlen));
          let off = 2 + tlen;
          if (qos > 0) {
            const pid = (body[off] << 8) | body[off + 1];
            off += 2;
            send(packet(PUBACK, 0, [pid >> 8, pid & 0xff])); // QoS 2 is never asked for
          }
          if (onMessage) onMessage(topic, dec.decode(body.subarray(off)));
          return;
        }
        case SUBACK:
        case UNSUBACK: {
          const pid = (body[0] << 8) | body[1];
          const p = pending.get(pid);
          pending.delete(pid);
          if (!p) return;
          const codes = Array.from(body.subarray(2));
          if (codes.includes(0x80)) p.reject(new MQTTError("the broker refused the subscription", 0x80));
          else p.resolve(codes);
          return;
        }
        case PINGRESP:
          return;
        default:
          // Nothing else is sent to a 3.1.1 subscriber.
      }
    }
  });
}

// The live topic of a datapoint: project/{p}/datapoint/{id}, with % / + #
// and NUL percent-encoded (decisions.md 6, the README's live data).
export function datapointTopic(projectId, id) {
  const escaped = id.replace(/[%\/+#\u0000]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0"));
  return `project/${projectId}/datapoint/${escaped}`;
}

// datapointOf reads the dataPointID back from a live topic ("" when the
// topic is not one).
export function datapointOf(topic) {
  const m = /^project\/\d+\/datapoint\/(.+)$/.exec(topic);
  if (!m) return "";
  return m[1].replace(/%(25|2F|2B|23|00)/gi, (s, h) => String.fromCharCode(parseInt(h, 16)));
}
