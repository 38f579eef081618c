"""An edge device written with paho-mqtt (MQTT 5 and 3.1.1), as a device
maker would write one from docs/edge-protocol.md, against `bdp serve` and
its embedded broker (issue 17, item 8):

- its answers and heartbeats carry a field bdp does not know (newer
  firmware): the write is written, the device stays online;
- an acked dry run ends in reported, never written: its status and log
  say that nothing was written;
- when its MQTT connection ends the device is offline at once: a dry run
  answers 503 and an acked write fails within seconds, saying nothing was
  sent, not after the 15-s heartbeat and 30-s operation time-outs.
"""

import json
import os
import threading
import time
from datetime import datetime, timezone

import paho.mqtt.client as mqtt
import pytest
import requests

# Well under the platform's 15 s heartbeat and 30 s operation time-outs.
AT_ONCE = 5.0


def now_rfc3339():
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class Device:
    """A minimal edge device: one priority array per datapoint, answers to
    write, read and the app operations, a heartbeat every second; every
    answer and heartbeat carries a "firmware" field of its own."""

    def __init__(self, host, port, project_id, username, password, protocol):
        self.project_id = project_id
        self.arrays = {}
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.subscribed = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"paho-device-{project_id}",
                                  protocol=protocol)
        self.client.username_pw_set(username, password)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda *a: self.subscribed.set()
        self.client.on_message = self._on_message
        self.client.connect(host, port, keepalive=30)
        self.client.loop_start()
        assert self.subscribed.wait(10), "the device did not subscribe"
        self.beat = threading.Thread(target=self._heartbeat, daemon=True)
        self.beat.start()

    def topic(self, name):
        return f"edge/{self.project_id}/{name}"

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        assert not reason_code.is_failure, f"CONNACK {reason_code}"
        client.subscribe(self.topic("request"), qos=1)

    def _publish(self, name, message):
        message = {"firmware": {"version": "2.0"}, **message}
        self.client.publish(self.topic(name), json.dumps(message), qos=1)

    def _heartbeat(self):
        while not self.stopped.is_set():
            self._publish("alive", {"time": now_rfc3339(), "apps": []})
            self.stopped.wait(1)

    def _on_message(self, client, userdata, msg):
        req = json.loads(msg.payload)
        answer = {"reference": req["reference"], "status": "ok"}
        if req["operation"] in ("write", "read"):
            with self.lock:
                slots = self.arrays.setdefault(req["dataPointID"], [None] * 17)
                answer["priority_array"] = list(slots)
                if req["operation"] == "write":
                    answer["overwritten_value"] = slots[req["priority"] - 1]
                    slots[req["priority"] - 1] = req["value"]
        self._publish("response", answer)

    def disconnect(self):
        self.stopped.set()
        self.beat.join()
        self.client.disconnect()
        self.client.loop_stop()


def mqtt_address(server):
    with open(os.path.join(server.data_dir, "addresses.json")) as f:
        host, port = json.load(f)["mqtt"].rsplit(":", 1)
    return host, int(port)


def poll(what, check, within):
    deadline = time.monotonic() + within
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within} s")
        time.sleep(0.1)


@pytest.mark.parametrize("protocol", [mqtt.MQTTv5, mqtt.MQTTv311], ids=["mqtt5", "mqtt311"])
def test_paho_edge_device(server, admin, protocol):
    api = server.base
    auth = (admin.email, admin.password)
    r = requests.post(f"{api}/v2/project", auth=auth, json={"company_id": admin.company_id, "name": "Plant"})
    assert r.status_code == 200, r.text
    pid = r.json()["resource"]["project"]["id"]
    r = server.operator("PUT", f"/operator/projects/{pid}/settings", json={"setpoint_writing_enabled": True})
    assert r.status_code == 200, r.text
    r = requests.post(f"{api}/v2/project/{pid}/timeseries", auth=auth,
                      json={"room_sp": [{"time": "2026-01-01T00:00:00Z", "value": 20}]})
    assert r.status_code == 200, r.text
    r = requests.put(f"{api}/v2/datapoint", auth=auth, params={"project_id": pid, "dataPointID": "room_sp"},
                     json={"setpoint_min_value": 15, "setpoint_max_value": 25})
    assert r.status_code == 200, r.text
    r = server.operator("POST", f"/operator/projects/{pid}/edge")
    assert r.status_code == 201, r.text
    creds = r.json()["resource"]

    host, port = mqtt_address(server)
    device = Device(host, port, pid, creds["username"], creds["password"], protocol)

    def online():
        r = requests.get(f"{api}/v2/project/{pid}/edge", auth=auth)
        assert r.status_code == 200, r.text
        return r.json()["online"]

    poll("the device online", online, 10)

    def setpoint(**query):
        r = requests.post(f"{api}/v2/datapoint/setpoint", auth=auth,
                          params={"project_id": pid, "dataPointID": "room_sp", "priority": 13, **query})
        return r

    def finished(reference):
        def check():
            r = requests.get(f"{api}/v2/datapoint/setpoint/{reference}", auth=auth)
            assert r.status_code == 200, r.text
            op = r.json()
            return op if op["status"] not in ("initialized", "requested") else None
        return check

    # Answers with a field bdp does not know: written, and still online.
    r = setpoint(value="21", acked="true")
    assert r.status_code == 200, r.text
    op = poll("the write answered", finished(r.json()["resource"]["reference"]), 15)
    assert op["status"] == "written", op
    assert online(), "the device's heartbeats were dropped"

    # An acked dry run: reported, and its log says nothing was written.
    r = setpoint(value="22", acked="true", dryrun="true")
    assert r.status_code == 200, r.text
    assert r.json()["resource"]["old_value"] == 21, r.text
    op = poll("the dry run answered", finished(r.json()["resource"]["reference"]), 15)
    assert op["status"] == "reported", op
    stages = [entry["status"] for entry in json.loads(op["log"])]
    assert "written" not in stages, op["log"]
    assert "nothing was written" in op["log"], op["log"]
    assert device.arrays["room_sp"][12] == 21, "the dry run wrote"

    # The device leaves: offline at once, requests fail fast.
    device.disconnect()
    left = time.monotonic()
    poll("the device offline", lambda: not online(), AT_ONCE)
    r = setpoint(value="22", dryrun="true")
    assert r.status_code == 503, r.text
    r = setpoint(value="22", acked="true")
    assert r.status_code == 200, r.text
    op = poll("the write failed", finished(r.json()["resource"]["reference"]), AT_ONCE)
    assert op["status"] == "failed" and "nothing was sent" in op["reason"], op
    assert time.monotonic() - left < AT_ONCE * 2
