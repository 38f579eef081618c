"""`make test-api`: schemathesis against bdp's own OpenAPI document.

Starts a real `bdp serve` (bdpserver.start), creates a company with its
admin through the operator API and a little data in it (projects,
datapoints with observations, a virtual datapoint, roles, a second user,
a mapped room with two analysis instances and a result of each),
then runs schemathesis on every operation of GET /v2/openapi.json, twice:
the /v2 routes with the admin's Basic credentials, the operator routes
with the operator token. Generated ids are drawn often from the ids that
exist (schemathesis dictionaries), so that requests reach the handlers
behind the permission check instead of stopping at 403 or 404.

The checks are those of issue 8: no 5xx, only documented status codes,
bodies that match the documented schemas. Generation is deterministic
(--generation-deterministic: the same cases every run) and bounded per
operation, so a run takes the same path every time and a minute or two.

Exit status: 0 when schemathesis found nothing.
"""

import json
import os
import subprocess
import sys
import tempfile

import requests

import bdpserver

HERE = os.path.dirname(os.path.abspath(__file__))

CHECKS = "not_a_server_error,status_code_conformance,response_schema_conformance"

# Examples per operation and phase (BDP_SCHEMATHESIS_ARGS adds options,
# e.g. --continue-on-failure).
MAX_EXAMPLES = os.environ.get("BDP_SCHEMATHESIS_EXAMPLES", "30")

# Operations left out, by operationId, each for a reason:
EXCLUDED = [
    # DELETE /v2/user deletes the calling user, the admin whose
    # credentials every later request carries: everything after it would
    # answer 401 and test nothing. http/admin_users_test.go covers it.
    "delete_user",
]


class Seed:
    """The data the run starts from, created as the company admin."""

    def __init__(self, server, admin):
        self.base = server.base
        self.auth = (admin.email, admin.password)
        self.admin = admin

    def call(self, method, path, want=200, **kw):
        res = requests.request(method, self.base + path, auth=self.auth, timeout=60, **kw)
        if res.status_code != want:
            raise RuntimeError(f"seed {method} {path}: {res.status_code} {res.text}")
        return res.json()

    def create(self):
        self.admin_role = self.admin.role_id
        self.project = self.call("POST", "/v2/company/project", json={"name": "fuzzed"})["resource"]["project"]["id"]
        self.spare_project = self.call("POST", "/v2/company/project", json={"name": "to delete"})["resource"]["project"]["id"]
        # temp_1 has a gap (interpolation fills it) and a unit (conversions
        # work); temp_2 has none (conversions answer 422).
        self.call("POST", f"/v2/project/{self.project}/timeseries", json={
            "temp_1": [{"time": "2024-01-01T00:00:00Z", "value": 20.5}, {"time": "2024-01-01T01:00:00Z", "value": 21},
                       {"time": "2024-01-01T05:30:00Z", "value": 19}],
            "temp_2": [{"time": "2024-01-01T00:00:00Z", "value": 18}],
        })
        requests.put(f"{self.base}/operator/projects/{self.project}/datapoints/temp_1/tags", timeout=60,
                     headers={"Authorization": "Bearer " + bdpserver.OPERATOR_TOKEN},
                     json=[{"key": "units", "value": "celsius"}]).raise_for_status()
        # A saved plot view and a favorite, so that the routes by id
        # reach a view (the run may change or delete it).
        self.plot_view = self.call("POST", f"/v2/project/{self.project}/plot-view", want=201, json={
            "name": "fuzzed view", "start": "2024-01-01T00:00:00Z", "end": "2024-01-02T00:00:00Z",
            "samplerate": "1h", "datapoints": ["temp_1"], "hidden_datapoints": ["temp_2"]})["id"]
        self.call("POST", "/v2/datapoint/favorite", params={"project_id": self.project, "dataPointID": "temp_1"})
        self.call("POST", f"/v2/project/{self.project}/virtual_datapoint",
                  params={"dataPointID": "temp_sum", "type": "formula"},
                  json={"pins": {"P1": {"dataPointID": "temp_1"}, "P2": {"dataPointID": "temp_2"}},
                        "parameters": {"formula": "P1 + P2;"}})
        self.project_role = self.call("POST", f"/v2/project/{self.project}/role", json={
            "name": "readers", "authed_endpoints": [0]})["resource"]["id"]
        self.company_role = self.call("POST", "/v2/company/role", json={
            "name": "spare", "authed_endpoints": [0]})["resource"]["id"]
        self.user = self.call("POST", "/v2/company/user", json={
            "company_id": self.admin.company_id, "firstName": "Spare", "lastName": "User",
            "email": "spare@schemathesis.example", "password": "a-long-spare-password"})["resource"]["id"]
        self.call("POST", f"/v2/company/role/{self.company_role}/user/{self.user}")
        self.call("POST", f"/v2/project/{self.project}/role/{self.project_role}/user/{self.user}")
        self.create_analytics()

    def create_analytics(self):
        """A room with its operative temperature on temp_1, an instance of
        thermal comfort on it and one of room air quality (co2 unmapped),
        each run once: the server's runners finish the first with Success
        and the second with Failed, so the result routes answer all three
        statuses' shapes."""
        components = {c["alphanumeric_id"]: c["id"] for c in self.call("GET", "/v2/components")}
        room = self.call("POST", f"/v2/project/{self.project}/componentInProject",
                         json={"component_id": components["room"], "nameEN": "Room 1"})["resource"]
        self.room = room["id"]
        pin = next(p["id"] for p in room["pins"] if p["alphanumeric_id"] == "operative_temperature")
        self.call("POST", f"/v2/project/{self.project}/componentInProject/pin/datapoint",
                  json={"componentinproject_id": self.room, "pin_id": pin, "dataPointID": "temp_1"})
        functions = {f["alphanumeric_id"]: f["id"] for f in
                     self.call("GET", "/v2/analytics/functions", params={"component_alphanumeric_id": "room"})}
        self.instances, self.results = [], []
        for function in ("thermal_comfort_analysis", "room_air_quality_analysis"):
            instance = self.call("POST", "/v2/analytics/instance", params={"project_id": self.project}, json={
                "analysisfunction_id": functions[function], "componentinproject_id": self.room, "name": function})["resource"]
            self.instances.append(instance["id"])
            run = self.call("POST", f"/v2/analytics/instance/{instance['id']}/run", params={
                "project_id": self.project, "start": "2024-01-01T00:00:00Z", "end": "2024-01-02T00:00:00Z"})
            self.results.append(run["resource"]["result_id"])

    def env(self):
        return {"BDP_ST_PROJECT": str(self.project), "BDP_ST_SPARE_PROJECT": str(self.spare_project),
                "BDP_ST_ADMIN_USER": str(self.admin.user_id), "BDP_ST_SPARE_USER": str(self.user)}

    def admin_lost(self):
        """What the admin lost during the run, if anything: their login,
        the company admin role or the seeded project. A run that lost one
        of them tested little after that point."""
        r = requests.get(self.base + "/v2/user", auth=self.auth, timeout=60)
        if r.status_code != 200:
            return f"their login (GET /v2/user: {r.status_code})"
        if self.admin_role not in [role["id"] for role in r.json()["companyroles"]]:
            return f"the company admin role ({r.text})"
        r = requests.get(f"{self.base}/v2/project/{self.project}", auth=self.auth, timeout=60)
        if r.status_code != 200:
            return f"the seeded project (GET /v2/project/{self.project}: {r.status_code})"
        return None

    def config(self):
        """schemathesis.toml: ids that exist, drawn in most cases."""
        def ints(values):
            return "[" + ", ".join(str(v) for v in values) + "]"
        return f"""
[dictionaries.projects]
values = {ints([self.project, self.spare_project])}
[dictionaries.roles]
values = {ints([self.project_role, self.company_role, self.admin_role])}
[dictionaries.users]
values = {ints([self.user, self.admin.user_id])}
[dictionaries.companies]
values = {ints([self.admin.company_id])}
[dictionaries.datapoints]
values = ["temp_1", "temp_2", "temp_sum"]
[dictionaries.components_in_project]
values = {ints([self.room])}
[dictionaries.instances]
values = {ints(self.instances)}
[dictionaries.plot_views]
values = [{json.dumps(self.plot_view)}]
[dictionaries.results]
values = [{", ".join(json.dumps(r) for r in self.results)}]

[parameters]
"path.project_id" = {{ dictionary = "projects", probability = 0.8 }}
"query.project_id" = {{ dictionary = "projects", probability = 0.8 }}
"path.role_id" = {{ dictionary = "roles", probability = 0.8 }}
"path.user_id" = {{ dictionary = "users", probability = 0.8 }}
"path.company_id" = {{ dictionary = "companies", probability = 0.8 }}
"path.dataPointID" = {{ dictionary = "datapoints", probability = 0.8 }}
"query.dataPointID" = {{ dictionary = "datapoints", probability = 0.8 }}
"path.componentinproject_id" = {{ dictionary = "components_in_project", probability = 0.8 }}
"path.instance_id" = {{ dictionary = "instances", probability = 0.8 }}
"path.result_id" = {{ dictionary = "results", probability = 0.8 }}
"path.plot_view_id" = {{ dictionary = "plot_views", probability = 0.8 }}
"""


def schemathesis(server, workdir, env, *args):
    cmd = [
        os.path.join(os.path.dirname(sys.executable), "schemathesis"),
        "--config-file", os.path.join(workdir, "schemathesis.toml"),
        "run", server.base + "/v2/openapi.json",
        "--url", server.base,
        "--checks", CHECKS,
        "--max-examples", MAX_EXAMPLES,
        # Deterministic by default, as CI needs; BDP_SCHEMATHESIS_SEED=N
        # explores other cases, reproducibly.
        *(["--seed", os.environ["BDP_SCHEMATHESIS_SEED"]] if os.environ.get("BDP_SCHEMATHESIS_SEED")
          else ["--generation-deterministic"]),
        # One worker: with two, hypothesis parses lambdas in two threads at
        # once, which CPython 3.11's ast module does not survive.
        "--workers", "1",
        "--no-color",
        "--request-timeout", "30",
        *os.environ.get("BDP_SCHEMATHESIS_ARGS", "").split(),
        *args,
    ]
    print("+", " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=workdir, env=env)


def main():
    # Random credentials hit the token grant and Basic authentication in
    # bulk from one address: the failed-login throttle (429) would answer
    # for the rest of the run, so this server allows far more failures.
    server = bdpserver.start(env={
        "BDP_LOGIN_ACCOUNT_FAILURES": "1000000",
        "BDP_LOGIN_ADDRESS_FAILURES": "1000000",
    })
    try:
        admin = server.create_company("schemathesis", "admin@schemathesis.example", "a-long-admin-password")
        seed = Seed(server, admin)
        seed.create()
        with tempfile.TemporaryDirectory(prefix="bdp-schemathesis-") as workdir:
            with open(os.path.join(workdir, "schemathesis.toml"), "w") as f:
                f.write(seed.config())
            env = dict(os.environ, SCHEMATHESIS_HOOKS=os.path.join(HERE, "schemathesis_hooks.py"), **seed.env())
            excluded = []
            for operation_id in EXCLUDED:
                excluded += ["--exclude-operation-id", operation_id]
            v2 = schemathesis(server, workdir, env, "--include-path-regex", "^/v2/",
                              "--auth", f"{admin.email}:{admin.password}", *excluded)
            lost = seed.admin_lost()
            if lost:
                print(f"the admin lost {lost} during the run", file=sys.stderr)
                v2 = v2 or 1
            operator = schemathesis(server, workdir, env, "--include-path-regex", "^/operator/",
                                    "--header", "Authorization: Bearer " + bdpserver.OPERATOR_TOKEN)
        if server.proc.poll() is not None:
            print(f"bdp serve died during the run:\n{server.log_tail()}", file=sys.stderr)
            return 1
        if v2 or operator:
            print(f"bdp serve's log, last lines:\n{server.log_tail()}")
        print(f"schemathesis: /v2 {'passed' if v2 == 0 else 'FAILED'}, /operator {'passed' if operator == 0 else 'FAILED'}")
        return 1 if v2 or operator else 0
    finally:
        bdpserver.stop(server)


if __name__ == "__main__":
    sys.exit(main())
