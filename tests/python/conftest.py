"""pytest fixtures: one real `bdp serve` for the session, one company per test."""

import itertools

import pytest

import bdpserver

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
