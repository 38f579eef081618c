"""Debian's mosquitto 2 with its dynamic-security plugin for the Python
tests, as mqtt/mosquittotest starts it for the Go tests: a TCP and a
WebSocket listener on free 127.0.0.1 ports, no anonymous clients, one admin
client (the one bdp connects as, BDP_MQTT_ADMIN_USER) with every right,
everything else denied until bdp creates clients and roles; QoS 1 limits
raised far above Mosquitto's defaults. `make deps-test` installs it.
"""

import base64
import glob
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass

import bdpserver

BINARY = "/usr/sbin/mosquitto"
PLUGIN_GLOB = "/usr/lib/*/mosquitto_dynamic_security.so"
ADMIN_USER = "bdp-admin"


@dataclass
class Broker:
    url: str  # tcp://127.0.0.1:port, for BDP_MQTT_EXTERNAL
    tcp: tuple  # host, port
    ws: tuple  # host, port of the WebSocket listener
    admin_password: str
    dir: str
    proc: subprocess.Popen

    def log_tail(self, n=40):
        with open(os.path.join(self.dir, "mosquitto.log"), errors="replace") as f:
            return "".join(f.readlines()[-n:])


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dynsec(password):
    """The plugin's initial JSON; the password in the plugin's own scheme
    (PBKDF2-SHA512, 101 iterations)."""
    salt = secrets.token_bytes(12)
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, 101, 64)
    acls = [{"acltype": typ, "topic": topic, "allow": True}
            for topic in ["$CONTROL/dynamic-security/#", "$SYS/#", "#"]
            for typ in ["publishClientSend", "publishClientReceive", "subscribePattern", "unsubscribePattern"]]
    return {
        "clients": [{"username": ADMIN_USER, "textName": "bdp platform connection",
                     "password": base64.b64encode(digest).decode(), "salt": base64.b64encode(salt).decode(),
                     "iterations": 101, "roles": [{"rolename": "bdp-admin"}]}],
        "roles": [{"rolename": "bdp-admin", "acls": acls}],
        "groups": [],
        "defaultACLAccess": {"publishClientSend": False, "publishClientReceive": False, "subscribe": False,
                             "unsubscribe": True},
    }


def start(timeout=10):
    if not os.access(BINARY, os.X_OK) or not glob.glob(PLUGIN_GLOB):
        raise RuntimeError(f"no {BINARY} with its dynamic-security plugin: run `make deps-test`")
    plugin = glob.glob(PLUGIN_GLOB)[0]
    d = tempfile.mkdtemp(prefix="bdp-pytest-mosquitto-")
    password = secrets.token_hex(16)
    with open(os.path.join(d, "dynsec.json"), "w") as f:
        json.dump(_dynsec(password), f)
    tcp, ws = _free_port(), _free_port()
    conf = os.path.join(d, "mosquitto.conf")
    with open(conf, "w") as f:
        f.write("per_listener_settings false\nallow_anonymous false\n"
                f"listener {tcp} 127.0.0.1\nlistener {ws} 127.0.0.1\nprotocol websockets\n"
                f"plugin {plugin}\nplugin_opt_config_file {d}/dynsec.json\n"
                "max_inflight_messages 1000\nmax_queued_messages 1000000\nmax_queued_bytes 0\n"
                "log_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\n")
        if os.geteuid() == 0:
            # As root mosquitto would switch to the user "mosquitto", which
            # cannot read the temporary directory.
            f.write("user root\n")
    log = open(os.path.join(d, "mosquitto.log"), "wb")
    proc = subprocess.Popen([BINARY, "-c", conf], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    broker = Broker(url=f"tcp://127.0.0.1:{tcp}", tcp=("127.0.0.1", tcp), ws=("127.0.0.1", ws),
                    admin_password=password, dir=d, proc=proc)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = broker.log_tail()
            stop(broker)
            raise RuntimeError(f"mosquitto exited at start:\n{tail}")
        try:
            for port in (tcp, ws):
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return broker
        except OSError:
            time.sleep(0.05)
    tail = broker.log_tail()
    stop(broker)
    raise RuntimeError(f"mosquitto did not listen within {timeout}s:\n{tail}")


def stop(broker):
    bdpserver.end_process(broker.proc, signal.SIGINT, 10)
    shutil.rmtree(broker.dir, ignore_errors=True)
