"""bdp's MQTT driven with Eclipse paho-mqtt, as a user's Python program
drives it: MQTT 5 and 3.1.1, over TCP and WebSocket, with the callbacks
paho's documentation shows (subscribe in on_connect); on bdp's embedded
broker and on Mosquitto (BDP_MQTT_EXTERNAL) alike.

Live data comes from uploads through the HTTP API; an MQTT user with read
rights receives it on project/{project_id}/datapoint/{dataPointID}.
"""

import json
import queue
import uuid

import paho.mqtt.client as mqtt
import pytest
import requests
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

WAIT = 10  # seconds a message or an acknowledgement may take


@pytest.fixture(params=["embedded", "mosquitto"])
def platform(request):
    """bdp with its embedded broker or with Mosquitto, and a fresh company's admin."""
    srv = request.getfixturevalue("server" if request.param == "embedded" else "mosquitto_server")
    tag = uuid.uuid4().hex[:8]
    return srv, srv.create_company(f"MQTT {tag}", f"mqtt.{tag}@newco.example", "s3cr3tp4ssw0rd-long")


def reader(api_url, admin):
    """A new project with a read-only MQTT user: project id, username, password."""
    auth = (admin.email, admin.password)
    r = requests.post(f"{api_url}/v2/project", auth=auth,
                      json={"company_id": admin.company_id, "name": "MQTT " + uuid.uuid4().hex[:8]})
    assert r.status_code == 200, r.text
    project_id = r.json()["resource"]["project"]["id"]
    username, password = "reader-" + uuid.uuid4().hex[:8], "reader-password-1"
    r = requests.post(f"{api_url}/v2/project/{project_id}/mqttuser", auth=auth,
                      json={"username": username, "password": password, "rights": "read"})
    assert r.status_code == 201, r.text
    return project_id, username, password


def upload(api_url, admin, project_id, datapoint, values, first=0):
    """Stores values of one datapoint in one request, a second apart from
    second first on."""
    body = {datapoint: [{"time": f"2026-03-02T00:00:{first + i:02d}Z", "value": v} for i, v in enumerate(values)]}
    r = requests.post(f"{api_url}/v2/project/{project_id}/timeseries", auth=(admin.email, admin.password), json=body)
    assert r.status_code in (200, 201), r.text


class Subscriber:
    """A paho-mqtt client that subscribes to a filter at QoS 1 in
    on_connect and hands on what arrives, the SUBACKs' reason codes and
    the reason of a disconnection."""

    def __init__(self, server, username, password, topic_filter, *, protocol=mqtt.MQTTv5, transport="tcp",
                 client_id="", keep_session=False):
        self.messages, self.subacks, self.disconnects = queue.Queue(), queue.Queue(), queue.Queue()
        self.filter = topic_filter
        kw = {"clean_session": not keep_session} if protocol != mqtt.MQTTv5 else {}
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=protocol,
                                  transport=transport, **kw)
        if transport == "websockets":
            self.client.ws_set_options(path="/mqtt")
        self.client.username_pw_set(username, password)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda c, u, mid, codes, props: self.subacks.put(codes)
        self.client.on_message = lambda c, u, m: self.messages.put(m)
        self.client.on_disconnect = lambda c, u, flags, code, props: self.disconnects.put(code)
        self.connected = queue.Queue()
        host, port = server.address("mqtt_ws" if transport == "websockets" else "mqtt")
        if protocol == mqtt.MQTTv5:
            props = None
            if keep_session:
                props = Properties(PacketTypes.CONNECT)
                props.SessionExpiryInterval = 300
            self.client.connect(host, port, clean_start=not keep_session, properties=props)
        else:
            self.client.connect(host, port)
        self.client.loop_start()
        code = self.connected.get(timeout=WAIT)
        assert not code.is_failure, f"CONNACK {code}"
        codes = self.subacks.get(timeout=WAIT)
        assert [c.value for c in codes] == [1], f"SUBACK {codes}, want QoS 1 granted"

    def _on_connect(self, client, userdata, flags, code, props):
        self.connected.put(code)
        if not code.is_failure:
            client.subscribe(self.filter, qos=1)

    def next(self):
        try:
            return self.messages.get(timeout=WAIT)
        except queue.Empty:
            gone = [] if self.disconnects.empty() else [str(self.disconnects.get())]
            pytest.fail(f"no message within {WAIT} s; disconnected: {gone}")

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


@pytest.mark.parametrize("transport", ["tcp", "websockets"])
def test_mqtt5_live_data_without_subscription_identifier(platform, transport):
    # A subscription made without a subscription identifier gets messages
    # without one: the property with value 0 is a protocol error (MQTT 5
    # 3.3.2.3.8), for which paho-mqtt dropped the connection and received
    # nothing.
    server, admin = platform
    api_url = server.base
    project_id, username, password = reader(api_url, admin)
    sub = Subscriber(server, username, password, f"project/{project_id}/#", transport=transport)
    try:
        upload(api_url, admin, project_id, "temperature", [20.5, 21.0, 21.5])
        for value in [20.5, 21.0, 21.5]:
            m = sub.next()
            assert m.topic == f"project/{project_id}/datapoint/temperature"
            assert json.loads(m.payload)["value"] == value
            assert not hasattr(m.properties, "SubscriptionIdentifier"), m.properties
        assert sub.disconnects.empty(), f"disconnected: {sub.disconnects.get()}"
    finally:
        sub.close()


@pytest.mark.parametrize("protocol", [mqtt.MQTTv311, mqtt.MQTTv5], ids=["3.1.1", "5"])
def test_kept_session_gets_what_was_stored_while_away_in_order(platform, protocol):
    # A client with a kept session (clean session off; MQTT 5: a session
    # expiry) that was away while values were stored gets them oldest
    # first when it returns, so a last-value consumer ends on the newest
    # (bdp sent 2, 3, 4, 5, 1). Its SUBSCRIBE in on_connect is granted
    # though the broker's messages in flight use the same packet ids
    # (bdp answered 0x91, no MQTT 3.1.1 code at all).
    server, admin = platform
    api_url = server.base
    project_id, username, password = reader(api_url, admin)
    client_id = "keeper-" + uuid.uuid4().hex[:8]
    topic_filter = f"project/{project_id}/#"
    Subscriber(server, username, password, topic_filter, protocol=protocol, client_id=client_id,
               keep_session=True).close()
    values = [float(v) for v in range(1, 11)]  # bdp's order was a map's: 5 came in order now and then
    upload(api_url, admin, project_id, "meter", values)
    sub = Subscriber(server, username, password, topic_filter, protocol=protocol, client_id=client_id,
                     keep_session=True)
    try:
        got = [json.loads(sub.next().payload)["value"] for _ in values]
        assert got == values
        upload(api_url, admin, project_id, "meter", [99.0], first=len(values))
        assert json.loads(sub.next().payload)["value"] == 99.0
        assert sub.disconnects.empty(), f"disconnected: {sub.disconnects.get()}"
    finally:
        sub.close()
