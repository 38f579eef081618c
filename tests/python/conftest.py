"""pytest fixtures: one real `bdp serve` for the session, one company per test;
another `bdp serve` on Debian's Mosquitto for the MQTT tests."""

import itertools

import pytest

import bdpserver
import mosquitto

_companies = itertools.count(1)


@pytest.fixture(scope="session")
def server():
    srv = bdpserver.start()
    yield srv
    bdpserver.stop(srv)


@pytest.fixture
def admin(server):
    """A fresh company with its admin, created through the operator API."""
    n = next(_companies)
    return server.create_company(f"NewCo {n}", f"john.doe{n}@newco.example", "s3cr3tp4ssw0rd-long")


@pytest.fixture
def api_url(server):
    return server.base


@pytest.fixture(scope="session")
def mosquitto_server():
    """bdp serve with an external broker (BDP_MQTT_EXTERNAL): a Mosquitto of
    the session's; MQTT clients connect to Mosquitto's listeners."""
    broker = mosquitto.start()
    try:
        srv = bdpserver.start(env={"BDP_MQTT_EXTERNAL": broker.url, "BDP_MQTT_ADMIN_USER": mosquitto.ADMIN_USER,
                                   "BDP_MQTT_ADMIN_PASSWORD": broker.admin_password})
    except Exception:
        mosquitto.stop(broker)
        raise
    srv.external_mqtt = {"mqtt": broker.tcp, "mqtt_ws": broker.ws}
    yield srv
    bdpserver.stop(srv)
    mosquitto.stop(broker)
