"""One real `bdp serve` for the Python tests, started as a user starts it.

The server listens on port 0 with its own data directory and managed
PostgreSQL; its address comes from $BDP_DATA_DIR/addresses.json. A company
with its admin is created through the operator API, so that every test
talks to the platform with the credentials of a company admin.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

import requests

OPERATOR_TOKEN = "operator-token-for-python-tests"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class Admin:
    email: str
    password: str
    company_id: int
    user_id: int
    role_id: int  # the company admin role


@dataclass
class Server:
    base: str
    data_dir: str
    proc: subprocess.Popen
    log_path: str
    admins: list = field(default_factory=list)
    # Where MQTT clients connect when bdp uses an external broker
    # (addresses.json keys mqtt, mqtt_ws: host, port); None: bdp's own.
    external_mqtt: dict = None

    def operator(self, method, path, **kw):
        headers = kw.pop("headers", {})
        headers["Authorization"] = "Bearer " + OPERATOR_TOKEN
        return requests.request(method, self.base + path, headers=headers, timeout=60, **kw)

    def create_company(self, name, email, password):
        """Creates a company with its admin through the operator API."""
        res = self.operator("POST", "/operator/companies", json={
            "name": name,
            "admin": {"firstName": "Ada", "lastName": "Lovelace", "email": email, "password": password},
        })
        if res.status_code != 201:
            raise RuntimeError(f"create company {name}: {res.status_code} {res.text}")
        body = res.json()["resource"]
        admin = Admin(email=email, password=password, company_id=body["company"]["id"], user_id=body["user"]["id"],
                      role_id=body["role"]["id"])
        self.admins.append(admin)
        return admin

    def address(self, key):
        """host, port where MQTT clients connect, by the addresses.json key
        of bdp's own listener (mqtt, mqtt_ws)."""
        if self.external_mqtt:
            return self.external_mqtt[key]
        with open(os.path.join(self.data_dir, "addresses.json")) as f:
            host, port = json.load(f)[key].rsplit(":", 1)
        return host, int(port)

    def log_tail(self, n=60):
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-n:])


def binary():
    """The bdp binary: $BDP_BIN, else bin/bdp of the repository."""
    path = os.environ.get("BDP_BIN") or os.path.join(REPO, "bin", "bdp")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"no bdp binary at {path}: run `make build` first")
    return path


def start(env=None, ready_timeout=120):
    """Starts `bdp serve` and waits until /readyz answers 200."""
    data_dir = tempfile.mkdtemp(prefix="bdp-pytest-")
    # As root the managed PostgreSQL runs as the postgres user, which must
    # be able to enter the data directory (mkdtemp makes it 0700).
    os.chmod(data_dir, 0o755)
    log_path = os.path.join(data_dir, "serve.log")
    # The server's configuration is this function's alone: a BDP_* variable
    # of the caller's shell (BDP_DATABASE_URL above all) stays out.
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("BDP_")}
    full_env.update({
        "BDP_HTTP_ADDR": "127.0.0.1:0",
        "BDP_MQTT_ADDR": "127.0.0.1:0",
        "BDP_MQTT_WS_ADDR": "127.0.0.1:0",
        "BDP_S3_ADDR": "127.0.0.1:0",
        "BDP_DATA_DIR": data_dir,
        "BDP_OPERATOR_TOKEN": OPERATOR_TOKEN,
        "BDP_LOG_LEVEL": "warn",
    })
    full_env.update(env or {})
    log = open(log_path, "wb")
    proc = subprocess.Popen([binary(), "serve"], env=full_env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    log.close()
    server = Server(base="", data_dir=data_dir, proc=proc, log_path=log_path)
    deadline = time.monotonic() + ready_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = server.log_tail()
            stop(server)
            raise RuntimeError(f"bdp serve exited with {proc.returncode}:\n{tail}")
        base = _ready(data_dir)
        if base:
            server.base = base
            return server
        time.sleep(0.2)
    tail = server.log_tail()
    stop(server)
    raise RuntimeError(f"bdp serve was not ready within {ready_timeout}s:\n{tail}")


def _ready(data_dir):
    try:
        with open(os.path.join(data_dir, "addresses.json")) as f:
            addr = json.load(f).get("http")
    except (OSError, ValueError):
        return None
    if not addr:
        return None
    base = "http://" + addr
    try:
        if requests.get(base + "/readyz", timeout=5).status_code == 200:
            return base
    except requests.RequestException:
        return None
    return None


def stop(server):
    """Stops the server with SIGTERM (it stops its PostgreSQL too) and
    removes its data directory."""
    end_process(server.proc, signal.SIGTERM, 60)
    shutil.rmtree(server.data_dir, ignore_errors=True)


def end_process(proc, sig, timeout):
    """Sends sig to a child process still running and waits for it; kills
    it when it has not ended within timeout seconds."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
