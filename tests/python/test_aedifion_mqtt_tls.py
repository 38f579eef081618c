"""A building's gateway as aedifion's MQTT tutorial writes it, against bdp.

The tutorial connects with paho-mqtt over TLS (tls_set with the broker's
CA) and publishes Influx line protocol, `<dataPointID> value=<v> <ns>`. Here
bdp serves its embedded broker with BDP_MQTT_TLS_ADDR and BDP_MQTT_WSS_ADDR
and a certificate made for this test by a CA made for this test (openssl);
the gateway publishes with paho-mqtt in MQTT 5 and 3.1.1 mode, over TLS and
over WebSocket over TLS, and Debian's mosquitto_sub, trusting the CA with
--cafile, receives what was stored.
"""

import json
import os
import queue
import subprocess
import tempfile
import threading
import time

import paho.mqtt.client as mqtt
import pytest
import requests

import bdpserver

NS = 1_600_000_000_000_000_000  # 2020-09-13T12:26:40Z, the tutorial's timestamp


def make_certificates(directory):
    """A CA and a server certificate for 127.0.0.1 and localhost, signed by
    it; returns the paths of the CA certificate, the server certificate and
    the server key."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=directory)

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=bdp test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\n"
                "keyUsage=critical,digitalSignature\n"
                "basicConstraints=CA:FALSE\n"
                "authorityKeyIdentifier=keyid\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.crt", "-days", "1", "-extfile", "server.ext")
    return tuple(os.path.join(directory, n) for n in ("ca.crt", "server.crt", "server.key"))


@pytest.fixture(scope="module")
def tls():
    """bdp serve with TLS listeners; yields (server, addresses, CA file)."""
    certs = tempfile.mkdtemp(prefix="bdp-pytest-tls-")
    ca, cert, key = make_certificates(certs)
    srv = bdpserver.start(env={"BDP_MQTT_TLS_ADDR": "127.0.0.1:0", "BDP_MQTT_WSS_ADDR": "127.0.0.1:0",
                               "BDP_TLS_CERT": cert, "BDP_TLS_KEY": key})
    try:
        with open(os.path.join(srv.data_dir, "addresses.json")) as f:
            addresses = json.load(f)
        yield srv, addresses, ca
    finally:
        bdpserver.stop(srv)
        subprocess.run(["rm", "-rf", certs], check=False)


_names = iter(range(1, 1000))


@pytest.fixture
def project(tls):
    """A company's project with a write and a read MQTT user; yields
    (api base, auth, project id)."""
    srv, _, _ = tls
    n = next(_names)
    admin = srv.create_company(f"TLS Co {n}", f"gateway{n}@tls.example", "s3cr3tp4ssw0rd-long")
    auth = (admin.email, admin.password)
    r = requests.post(f"{srv.base}/v2/project", auth=auth, json={"company_id": admin.company_id, "name": f"Building {n}"})
    assert r.status_code == 200, r.text
    project_id = r.json()["resource"]["project"]["id"]
    for user, rights in (("gateway", "write"), ("reader", "read")):
        r = requests.post(f"{srv.base}/v2/project/{project_id}/mqttuser", auth=auth,
                          json={"username": f"{user}-{n}", "password": "mqtt-password-1", "rights": rights})
        assert r.status_code == 201, r.text
    return srv.base, auth, project_id, n


def host_port(address):
    host, port = address.rsplit(":", 1)
    return host, int(port)


def gateway(address, ca, username, protocol, transport="tcp"):
    """Connects as aedifion's tutorial does: tls_set with the CA, username and
    password; returns the client once its CONNACK said yes."""
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"{username}-{protocol}-{transport}",
                         protocol=protocol, transport=transport)
    if transport == "websockets":
        client.ws_set_options(path="/mqtt")
    client.tls_set(ca_certs=ca)
    client.username_pw_set(username, "mqtt-password-1")
    connacks = queue.Queue()
    client.on_connect = lambda c, u, flags, reason, props: connacks.put(reason)
    acks = {}
    acked = threading.Condition()

    def on_publish(c, u, mid, reason, props):
        with acked:
            acks[mid] = reason
            acked.notify_all()

    client.on_publish = on_publish
    client.acks, client.acked = acks, acked
    host, port = host_port(address)
    client.connect(host, port, keepalive=30)
    client.loop_start()
    try:
        reason = connacks.get(timeout=15)
    except queue.Empty:
        client.loop_stop()
        pytest.fail(f"no CONNACK over {transport} TLS from {address}")
    assert not reason.is_failure, reason
    return client


def publish(client, topic, payload):
    """Publishes at QoS 1 and returns the PUBACK's reason code."""
    info = client.publish(topic, payload, qos=1)
    with client.acked:
        assert client.acked.wait_for(lambda: info.mid in client.acks, timeout=15), "no PUBACK"
        return client.acks[info.mid]


def stored(base, auth, project_id, datapoint):
    r = requests.get(f"{base}/v2/datapoint/timeseries", auth=auth,
                     params={"project_id": project_id, "dataPointID": datapoint, "start": "2020-01-01", "end": "2021-01-01"})
    if r.status_code == 404:
        return []
    assert r.status_code == 200, r.text
    return [(o["time"], o["value"]) for o in r.json()["data"]]


@pytest.mark.parametrize("protocol", [mqtt.MQTTv5, mqtt.MQTTv311], ids=["v5", "v311"])
@pytest.mark.parametrize("transport", ["tcp", "websockets"])
def test_gateway_over_tls_publishes_line_protocol(tls, project, protocol, transport):
    _, addresses, ca = tls
    base, auth, project_id, n = project
    address = addresses["mqtt_tls" if transport == "tcp" else "mqtt_wss"]
    client = gateway(address, ca, f"gateway-{n}", protocol, transport)
    try:
        topic = f"project/{project_id}/datapoint/dp"
        # The tutorial's message, then two lines in one message.
        assert not publish(client, topic, f"dp value=0 {NS}").is_failure
        assert not publish(client, topic, f"dp,unit=degC value=21.5 {NS + 10**9}\ndp value=7i {NS + 2 * 10**9}\n").is_failure
        # Acknowledged after storage: readable at once.
        assert stored(base, auth, project_id, "dp") == [
            ("2020-09-13T12:26:40Z", 0), ("2020-09-13T12:26:41Z", 21.5), ("2020-09-13T12:26:42Z", 7)]

        # Neither JSON nor line protocol: MQTT 5 hears 0x99 (payload format
        # invalid) and why; 3.1.1 cannot be told and gets a plain PUBACK.
        reason = publish(client, topic, "hello gateway")
        if protocol == mqtt.MQTTv5:
            assert reason.value == 0x99, reason
        else:
            assert not reason.is_failure
        assert len(stored(base, auth, project_id, "dp")) == 3
    finally:
        client.disconnect()
        client.loop_stop()


def test_mosquitto_sub_with_cafile_receives_what_the_gateway_stored(tls, project):
    _, addresses, ca = tls
    _, _, project_id, n = project
    host, port = host_port(addresses["mqtt_tls"])
    # stdbuf: -d writes through stdio, which buffers a pipe until exit.
    sub = subprocess.Popen(["stdbuf", "-oL", "mosquitto_sub", "-h", host, "-p", str(port), "--cafile", ca, "-V", "mqttv311",
                            "-i", f"mosquitto-sub-{n}", "-u", f"reader-{n}", "-P", "mqtt-password-1",
                            "-t", f"project/{project_id}/#", "-q", "1", "-C", "1", "-W", "30", "-v", "-d"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # -d prints the SUBACK: from then on the live data reaches it.
        lines = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = sub.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "SUBACK" in line:
                break
        assert any("SUBACK" in line for line in lines), "".join(lines)
        client = gateway(addresses["mqtt_tls"], ca, f"gateway-{n}", mqtt.MQTTv5)
        try:
            assert not publish(client, f"project/{project_id}/datapoint/dp", f"dp value=3.5 {NS}").is_failure
        finally:
            client.disconnect()
            client.loop_stop()
        out, _ = sub.communicate(timeout=40)
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    published = [line for line in out.splitlines() if line.startswith(f"project/{project_id}/datapoint/dp ")]
    assert published, out
    assert json.loads(published[0].split(" ", 1)[1]) == {"time": "2020-09-13T12:26:40Z", "value": 3.5}


def test_plain_mqtt_on_the_tls_port_gets_no_session(tls, project):
    _, addresses, _ = tls
    _, _, project_id, n = project
    host, port = host_port(addresses["mqtt_tls"])
    r = subprocess.run(["mosquitto_sub", "-h", host, "-p", str(port), "-u", f"reader-{n}", "-P", "mqtt-password-1",
                        "-t", f"project/{project_id}/#", "-C", "1", "-W", "5"], capture_output=True, text=True)
    assert r.returncode != 0
