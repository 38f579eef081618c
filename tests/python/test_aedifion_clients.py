"""bdp driven the way aedifion's published Python examples drive their API.

Each test makes the requests of one of aedifion's tutorials (authentication,
administration, data import and export, and the tutorial API client) with
the `requests` library, using their parameter names, bodies and auth, and
checks the answers against the shapes those tutorials and aedifion's
published OpenAPI document show. Where
api.md or decisions.md decide otherwise (decisions.md 10), the test says so.
"""

from datetime import datetime, timedelta

import pytest
import requests


def endpoint_id(api_url, method, path):
    """The administration tutorial's getEndpointId: no credentials needed."""
    for endpoint in requests.get(api_url + "/v2/meta/endpoints").json():
        if endpoint["path"] == path and endpoint["request_method"] == method:
            return endpoint["id"]
    return None


def new_project(api_url, auth, company_id, name):
    r = requests.post(f"{api_url}/v2/project", auth=auth,
                      json={"company_id": company_id, "name": name, "description": f"{name} for the client tests"})
    assert r.status_code == 200, r.text
    return r.json()["resource"]["project"]["id"]


# aedifion's clients take a token from /v2/user/token; api.md's path is
# /v2/auth/token (decisions.md 10: both work).
@pytest.mark.parametrize("token_path", ["/v2/auth/token", "/v2/user/token"])
def test_token_by_password_grant(api_url, admin, token_path):
    # The authentication tutorial's direct access grant: a form with
    # username, password, grant_type and client_id; the token then goes
    # into the Authorization header.
    data = {"username": admin.email, "password": admin.password, "grant_type": "password", "client_id": "tutorial-python"}
    r = requests.post(api_url + token_path, data=data)
    assert r.status_code == 200, r.text
    token = r.json()
    assert token["token_type"].lower() == "bearer"
    assert token["expires_in"] > 0
    r = requests.get(f"{api_url}/v2/user", headers={"Authorization": f"Bearer {token['access_token']}"})
    assert r.status_code == 200, r.text
    assert r.json()["user"]["email"] == admin.email
    # A wrong password gets no token.
    r = requests.post(api_url + token_path, data=dict(data, password="wrong-password"))
    assert r.status_code == 401, r.text


def test_user_tutorial_client(api_url, admin):
    # aedifion's tutorial API client, examples 1 to 4.
    auth = (admin.email, admin.password)
    r = requests.get(f"{api_url}/v2/user", auth=auth)
    assert r.status_code == 200, r.text
    userjson = r.json()
    assert {"user", "roles", "companyroles"} <= set(userjson)
    first, last = userjson["user"]["firstName"], userjson["user"]["lastName"]
    assert userjson["user"]["company_id"] == admin.company_id
    # aedifion's UserWithContext carries the company beside the user.
    assert userjson["company"]["id"] == admin.company_id
    assert userjson["company"]["name"]

    # (2) change the name, then back
    r = requests.put(f"{api_url}/v2/user", auth=auth, json={"firstName": first.upper(), "lastName": last.upper()})
    assert r.status_code == 200, r.text
    assert r.json()["resource"]["firstName"] == first.upper()
    assert r.json()["resource"]["lastName"] == last.upper()
    r = requests.put(f"{api_url}/v2/user", auth=auth, json={"firstName": first, "lastName": last})
    assert r.status_code == 200, r.text

    # The administration tutorial changes the password through PUT
    # /v2/user; bdp refuses that by name (issue 8, item 11) instead of
    # ignoring it, and takes it on /v2/user/password, form-encoded as
    # aedifion's OpenAPI document has it.
    r = requests.put(f"{api_url}/v2/user", auth=auth, json={"firstName": first, "password": "my0wnsup3rs3cr3tpw"})
    assert r.status_code == 400, r.text
    assert "/v2/user/password" in r.json()["error"]
    assert requests.get(f"{api_url}/v2/user", auth=auth).json()["user"]["firstName"] == first  # nothing changed
    r = requests.put(f"{api_url}/v2/user/password", auth=auth,
                     data={"current_password": admin.password, "new_password": "my0wnsup3rs3cr3tpw"})
    assert r.status_code == 200, r.text
    assert requests.get(f"{api_url}/v2/user", auth=auth).status_code == 401
    auth = (admin.email, "my0wnsup3rs3cr3tpw")
    assert requests.get(f"{api_url}/v2/user", auth=auth).status_code == 200

    # (3) create another user of the own company
    email = f"max{admin.company_id}@some-company.example"
    newuser = {"firstName": "Max", "lastName": "Mustermann", "email": email,
               "company_id": userjson["user"]["company_id"], "password": "asecretpw"}
    r = requests.post(f"{api_url}/v2/user", auth=auth, json=newuser)
    assert r.status_code == 200, r.text
    created = r.json()["resource"]
    assert created["email"] == email and created["company_id"] == admin.company_id
    assert "password" not in created

    # (4) the new user deletes themself
    auth_newuser = (email, "asecretpw")
    assert requests.get(f"{api_url}/v2/user", auth=auth_newuser).status_code == 200
    r = requests.delete(f"{api_url}/v2/user", auth=auth_newuser)
    assert r.status_code == 200, r.text
    assert r.json()["operation"] == "delete"
    assert requests.get(f"{api_url}/v2/user", auth=auth_newuser).status_code == 401


def test_company_and_projects(api_url, admin):
    # The administration tutorial: view the company, add, change and
    # delete a project.
    auth = (admin.email, admin.password)
    project = {"company_id": admin.company_id, "name": "simu_01", "description": "My first simulation project."}
    r = requests.post(f"{api_url}/v2/project", auth=auth, json=project)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["success"] is True and body["operation"] == "create"
    created = body["resource"]["project"]
    assert created["name"] == "simu_01" and created["company_id"] == admin.company_id
    assert created["description"] == "My first simulation project."
    role = body["resource"]["role"]
    assert role["project_id"] == created["id"] and role["authed_endpoints"]
    project_id = created["id"]

    r = requests.get(f"{api_url}/v2/company", auth=auth)
    assert r.status_code == 200, r.text
    company = r.json()
    assert company["company"]["id"] == admin.company_id
    assert [p["name"] for p in company["projects"] if p["id"] == project_id] == ["simu_01"]
    assert admin.email in [u["email"] for u in company["users"]]

    # GET /v2/user/projects and GET /v2/project/{project_id}: aedifion's
    # ProjectWithContext, the project with its company and datapoint keys.
    r = requests.get(f"{api_url}/v2/user/projects", auth=auth)
    assert r.status_code == 200, r.text
    mine = [p for p in r.json() if p["project"]["id"] == project_id]
    assert len(mine) == 1, r.text
    assert mine[0]["project"]["name"] == "simu_01"
    assert mine[0]["company"]["id"] == admin.company_id
    assert isinstance(mine[0]["dataPointKeys"], list)
    r = requests.get(f"{api_url}/v2/project/{project_id}", auth=auth)
    assert r.status_code == 200, r.text
    assert r.json()["project"]["id"] == project_id and r.json()["project"]["name"] == "simu_01"
    assert r.json()["company"]["id"] == admin.company_id

    update = {"name": "SIMU02", "description": "My second simulation project."}
    r = requests.put(f"{api_url}/v2/project/{project_id}", auth=auth, json=update)
    assert r.status_code == 200, r.text
    assert r.json()["operation"] == "update"
    assert r.json()["resource"]["name"] == "SIMU02"
    assert r.json()["resource"]["description"] == "My second simulation project."

    # aedifion's DELETE takes the project's name as a safeguard: a wrong
    # one deletes nothing.
    r = requests.delete(f"{api_url}/v2/project/{project_id}", auth=auth, params={"project_name": "simu_01"})
    assert r.status_code == 400, r.text
    r = requests.delete(f"{api_url}/v2/project/{project_id}", auth=auth, params={"project_name": "SIMU02"})
    assert r.status_code == 200, r.text
    assert r.json()["operation"] == "delete"
    assert r.json()["resource"]["id"] == project_id and r.json()["resource"]["name"] == "SIMU02"
    r = requests.get(f"{api_url}/v2/company", auth=auth)
    assert project_id not in [p["id"] for p in r.json()["projects"]]


def test_roles(api_url, admin):
    # The administration tutorial's permissions section: a project role
    # and a company role from endpoint ids, assigned to a new user, seen
    # in that user's GET /v2/user, then changed.
    auth = (admin.email, admin.password)
    project_id = new_project(api_url, auth, admin.company_id, "TestProject01")

    id_get_project = endpoint_id(api_url, "GET", "/v2/project/{project_id}")
    id_put_project = endpoint_id(api_url, "PUT", "/v2/project/{project_id}")
    assert id_get_project and id_put_project
    newrole = {"name": "Maintainer", "description": "Limited access for maintainers of TestProject01",
               "authed_endpoints": [id_get_project, id_put_project]}
    r = requests.post(f"{api_url}/v2/project/{project_id}/role", auth=auth, json=newrole)
    assert r.status_code == 200, r.text
    project_role = r.json()["resource"]
    assert project_role["project_id"] == project_id and project_role["name"] == "Maintainer"
    assert sorted(project_role["authed_endpoints"]) == sorted([id_get_project, id_put_project])
    assert project_role["authed_tags"] == []

    id_post_project = endpoint_id(api_url, "POST", "/v2/project")
    id_delete_project = endpoint_id(api_url, "DELETE", "/v2/project/{project_id}")
    newrole = {"name": "Company Project Admin", "description": "Role for maintaining projects company-wide",
               "authed_endpoints": [id_post_project, id_put_project, id_delete_project]}
    r = requests.post(f"{api_url}/v2/company/role", auth=auth, json=newrole)
    assert r.status_code == 200, r.text
    company_role = r.json()["resource"]
    assert company_role["company_id"] == admin.company_id
    assert sorted(company_role["authed_endpoints"]) == sorted([id_post_project, id_put_project, id_delete_project])

    jane = {"firstName": "Jane", "lastName": "Doe", "email": f"jane.doe{admin.company_id}@newco.example",
            "password": "ch4ng3m3s00n", "company_id": admin.company_id}
    r = requests.post(f"{api_url}/v2/user", auth=auth, json=jane)
    assert r.status_code == 200, r.text
    jane_id = r.json()["resource"]["id"]
    r = requests.post(f"{api_url}/v2/project/{project_id}/role/{project_role['id']}/user/{jane_id}", auth=auth)
    assert r.status_code == 200, r.text
    assert r.json()["resource"]["role"]["id"] == project_role["id"]
    assert r.json()["resource"]["user"]["id"] == jane_id
    r = requests.post(f"{api_url}/v2/company/role/{company_role['id']}/user/{jane_id}", auth=auth)
    assert r.status_code == 200, r.text
    assert r.json()["resource"]["role"]["id"] == company_role["id"]

    # printUserRoles, as Jane
    auth_jane = (jane["email"], jane["password"])
    j = requests.get(f"{api_url}/v2/user", auth=auth_jane).json()
    assert [(r["name"], r["project_id"]) for r in j["roles"]] == [("Maintainer", project_id)]
    assert [r["name"] for r in j["companyroles"]] == ["Company Project Admin"]
    for role in j["roles"]:
        assert isinstance(role["authed_tags"], list)
    # Jane may now change the project, through the project role.
    r = requests.put(f"{api_url}/v2/project/{project_id}", auth=auth_jane, json={"description": "changed by Jane"})
    assert r.status_code == 200, r.text

    # Modifying a role replaces its lists.
    id_get_roles = endpoint_id(api_url, "GET", "/v2/project/{project_id}/roles")
    role_update = {"name": "Extended-Maintainer", "description": "Extended access for maintainers of TestProject01",
                   "authed_endpoints": [id_get_project, id_get_roles]}
    r = requests.put(f"{api_url}/v2/project/{project_id}/role/{project_role['id']}", auth=auth, json=role_update)
    assert r.status_code == 200, r.text
    assert sorted(r.json()["resource"]["authed_endpoints"]) == sorted([id_get_project, id_get_roles])
    r = requests.get(f"{api_url}/v2/project/{project_id}/roles", auth=auth)
    assert r.status_code == 200, r.text
    assert "Extended-Maintainer" in [role["name"] for role in r.json()]
    r = requests.get(f"{api_url}/v2/company/roles", auth=auth)
    assert r.status_code == 200, r.text
    assert "Company Project Admin" in [role["name"] for role in r.json()]

    r = requests.delete(f"{api_url}/v2/project/{project_id}/role/{project_role['id']}", auth=auth)
    assert r.status_code == 200, r.text
    r = requests.delete(f"{api_url}/v2/company/role/{company_role['id']}", auth=auth)
    assert r.status_code == 200, r.text
    j = requests.get(f"{api_url}/v2/user", auth=auth_jane).json()
    assert j["roles"] == [] and j["companyroles"] == []


def test_timeseries_upload_and_export(api_url, admin):
    # POST /v2/project/{project_id}/timeseries with the body of aedifion's
    # PostProjectTimeseriesRequest example, then the data import and
    # export tutorial's queries: by time window, with down-sampling, with
    # a limit.
    auth = (admin.email, admin.password)
    project_id = new_project(api_url, auth, admin.company_id, "Headquarters")
    days = [f"2018-01-{d:02d}T00:00:00Z" for d in range(1, 29)]
    timeseries = {
        "SunDegreeOverHorizon": [{"time": t, "value": 15.0 + i} for i, t in enumerate(days)],
        "dataPointID2": [{"time": "2023-01-01T12:00:00Z", "value": 3}],
    }
    r = requests.post(f"{api_url}/v2/project/{project_id}/timeseries", auth=auth, json=timeseries)
    # aedifion documents 201 for this upload; api.md shows the body only
    # and bdp answers 200 as for every other create without its own status.
    assert r.status_code in (200, 201), r.text
    assert r.json()["success"] is True

    query = {"project_id": project_id, "dataPointID": "SunDegreeOverHorizon", "start": "2018-01-01", "end": "2018-12-31"}
    r = requests.get(f"{api_url}/v2/datapoint/timeseries", auth=auth, params=query)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["dataPointID"] == "SunDegreeOverHorizon"
    assert isinstance(answer["tags"], list)
    assert [o["time"] for o in answer["data"]] == days
    assert [o["value"] for o in answer["data"]] == [15.0 + i for i in range(28)]

    # Weekly means; each time is the left boundary of its interval and the
    # mean is that of the observations in [time, time + 7 days).
    r = requests.get(f"{api_url}/v2/datapoint/timeseries", auth=auth, params=dict(query, samplerate="7d"))
    assert r.status_code == 200, r.text
    weekly = r.json()["data"]
    assert len(weekly) == 5, r.text
    day = {t: 15.0 + i for i, t in enumerate(days)}
    for o in weekly:
        start = datetime.fromisoformat(o["time"].replace("Z", "+00:00"))
        inside = [v for t, v in day.items()
                  if start <= datetime.fromisoformat(t.replace("Z", "+00:00")) < start + timedelta(days=7)]
        assert inside and o["mean"] == sum(inside) / len(inside), (o, inside)

    # The first five after start: no end, so max applies.
    query = {"project_id": project_id, "dataPointID": "SunDegreeOverHorizon", "start": "2018-01-10", "max": 5}
    r = requests.get(f"{api_url}/v2/datapoint/timeseries", auth=auth, params=query)
    assert r.status_code == 200, r.text
    assert [o["time"] for o in r.json()["data"]] == days[9:14]


INCORRECT_CSV = (
    "CorrectDatapoint,100,2018-12-18 04:00:00\n"
    '"Datapoint with backslash \\ in it",100,2018-12-18 04:00:00\n'
    "IncorrectTimestamp,100,181218 40000\n"
    "IncorrectValue,asdf,2018-12-18 04:00:00\n"
    "UnescapedDelimiter,inDatapointName,100,2018-12-18 04:00:00\n"
    ",100,2018-12-18 04:00:00\n"
)


def test_csv_import_tutorial_file_full_of_errors(api_url, admin, tmp_path):
    # The data import tutorial's file full of errors, posted as its Python
    # example posts: query format and on_error, the file as import_file.
    auth = (admin.email, admin.password)
    project_id = new_project(api_url, auth, admin.company_id, "CSV errors")
    filename = tmp_path / "test_upload.csv"
    filename.write_text(INCORRECT_CSV, encoding="utf-8")

    # abort: nothing is stored, the error names line 2 and its fault.
    with open(filename, "rb") as f:
        r = requests.post(f"{api_url}/v2/project/{project_id}/importTimeseries", auth=auth,
                          params={"format": "csv", "on_error": "abort"}, files={"import_file": f})
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["success"] is False and body["operation"] == "create"
    assert "2" in body["error"] and "backslash" in body["error"]
    r = requests.get(f"{api_url}/v2/datapoint/timeseries", auth=auth,
                     params={"project_id": project_id, "dataPointID": "CorrectDatapoint"})
    assert r.status_code == 404, r.text  # the datapoint was never stored

    # continue: 200, the good line stored, every bad one listed by number.
    with open(filename, "rb") as f:
        r = requests.post(f"{api_url}/v2/project/{project_id}/importTimeseries", auth=auth,
                          params={"format": "csv", "on_error": "continue"}, files={"import_file": f})
    assert r.status_code == 200, r.text
    resource = r.json()["resource"]
    assert resource["total_lines_success"] == 1
    assert resource["total_lines_error"] == 5
    assert [e["line_no"] for e in resource["errors"]] == [2, 3, 4, 5, 6]
    assert resource["project_id"] == project_id
    r = requests.get(f"{api_url}/v2/datapoint/timeseries", auth=auth,
                     params={"project_id": project_id, "dataPointID": "CorrectDatapoint",
                             "start": "2018-12-18", "end": "2018-12-19"})
    assert r.status_code == 200, r.text
    assert r.json()["data"] == [{"time": "2018-12-18T04:00:00Z", "value": 100}]


CORRECT_CSV = (
    '"DP with blanks and delimiter ,",10,2018-12-17\n'
    "DP with forward / slashes // in it,11.1,2018-12-17 1:00:00.000\n"
    '"DP with single \'qutoes\', double ""qutoes"", and the delimiter \',\'",12.3,2018-12-17T3:00:00+01\n'
    "Emojimania \U0001F604\U0001F601\U0001F605\U0001F602\U0001F60C\U0001F60D,100,2018-12-17 4:00:00+01:00\n"
    "SimpleASCIIDatapoint,-1,2018-12-17 04:00:00Z\n"
)

# What each line of CORRECT_CSV stores: dataPointID, time in UTC, value.
CORRECT_CSV_STORED = [
    ("DP with blanks and delimiter ,", "2018-12-17T00:00:00Z", 10),
    ("DP with forward / slashes // in it", "2018-12-17T01:00:00Z", 11.1),
    ("DP with single 'qutoes', double \"qutoes\", and the delimiter ','", "2018-12-17T02:00:00Z", 12.3),
    ("Emojimania \U0001F604\U0001F601\U0001F605\U0001F602\U0001F60C\U0001F60D", "2018-12-17T03:00:00Z", 100),
    ("SimpleASCIIDatapoint", "2018-12-17T04:00:00Z", -1),
]


def test_csv_import_tutorial_file(api_url, admin, tmp_path):
    # The data import tutorial's correct file (quotes, delimiters and
    # emoji in identifiers; one-digit hours, fractions and offsets in the
    # timestamps), posted as its Python example posts.
    auth = (admin.email, admin.password)
    project_id = new_project(api_url, auth, admin.company_id, "CSV")
    filename = tmp_path / "test_upload.csv"
    filename.write_text(CORRECT_CSV, encoding="utf-8")
    query = {"format": "csv", "on_error": "abort"}
    with open(filename, "rb") as f:
        r = requests.post(f"{api_url}/v2/project/{project_id}/importTimeseries", auth=auth, params=query,
                          files={"import_file": f})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["success"] is True and body["operation"] == "create"
    assert body["resource"]["total_lines_success"] == 5, r.text
    assert body["resource"]["total_lines_error"] == 0
    assert body["resource"]["errors"] == []
    assert body["resource"]["project_id"] == project_id

    # "query the project's datapoints through GET /v2/project/{project_id}
    # and verify that the uploaded datapoints are all there"
    r = requests.get(f"{api_url}/v2/project/{project_id}", auth=auth)
    assert r.status_code == 200, r.text
    assert sorted(r.json()["datapoints"]) == sorted(dp for dp, _, _ in CORRECT_CSV_STORED)
    r = requests.get(f"{api_url}/v2/project/{project_id}/datapointkeys", auth=auth)
    assert r.status_code == 200, r.text
    assert "name" in [key["name"] for key in r.json()]

    for dp, time, value in CORRECT_CSV_STORED:
        r = requests.get(f"{api_url}/v2/datapoint/timeseries", auth=auth,
                         params={"project_id": project_id, "dataPointID": dp, "start": "2018-12-17", "end": "2018-12-18"})
        assert r.status_code == 200, r.text
        assert r.json()["dataPointID"] == dp
        assert r.json()["data"] == [{"time": time, "value": value}], dp


def test_export_parameters_aedifion_documents(api_url, admin):
    # GET /v2/datapoint/timeseries with the parameters of aedifion's
    # OpenAPI document beyond the tutorial's: short, interpolation,
    # closed_interval and its aggregations.
    auth = (admin.email, admin.password)
    project_id = new_project(api_url, auth, admin.company_id, "Export")
    observations = [("2024-03-01T00:00:00Z", 10), ("2024-03-01T00:30:00Z", 10), ("2024-03-01T01:00:00Z", 20),
                    ("2024-03-01T03:00:00Z", 40), ("2024-03-01T03:20:00Z", 50)]
    r = requests.post(f"{api_url}/v2/project/{project_id}/timeseries", auth=auth,
                      json={"AHU1.SupplyTemp": [{"time": t, "value": v} for t, v in observations]})
    assert r.status_code in (200, 201), r.text
    url = f"{api_url}/v2/datapoint/timeseries"
    query = {"project_id": project_id, "dataPointID": "AHU1.SupplyTemp"}
    hourly = dict(query, start="2024-03-01T00:00:00Z", end="2024-03-01T04:00:00Z", samplerate="1h")

    # short: only the data, as [time, value] pairs
    r = requests.get(url, auth=auth, params=dict(query, start="2024-03-01", end="2024-03-02", short=True))
    assert r.status_code == 200, r.text
    assert r.json() == [[t, v] for t, v in observations]

    # interpolation of the empty interval 02:00-03:00 of an hourly read
    def hourly_means(**extra):
        r = requests.get(url, auth=auth, params=dict(hourly, **extra))
        assert r.status_code == 200, r.text
        return [(o["time"][11:16], o["mean"]) for o in r.json()["data"]]

    assert hourly_means(interpolation="previous") == [("00:00", 10), ("01:00", 20), ("02:00", 20), ("03:00", 45)]
    assert hourly_means(interpolation="linear") == [("00:00", 10), ("01:00", 20), ("02:00", 32.5), ("03:00", 45)]
    assert hourly_means(interpolation="null") == [("00:00", 10), ("01:00", 20), ("02:00", None), ("03:00", 45)]

    # closed_interval: the last value before start and before end, at
    # start and at end
    r = requests.get(url, auth=auth, params=dict(query, start="2024-03-01T00:10:00Z", end="2024-03-01T03:10:00Z",
                                                 closed_interval=True))
    assert r.status_code == 200, r.text
    assert [(o["time"][11:16], o["value"]) for o in r.json()["data"]] == [
        ("00:10", 10), ("00:30", 10), ("01:00", 20), ("03:00", 40), ("03:10", 40)]

    # the aggregations aedifion documents, each under its own name
    expected = {
        "mean": [10, 20, 45], "min": [10, 20, 40], "max": [10, 20, 50], "median": [10, 20, 45],
        "count": [2, 1, 2],
    }
    for aggregation, values in expected.items():
        r = requests.get(url, auth=auth, params=dict(hourly, aggregation=aggregation))
        assert r.status_code == 200, r.text
        assert [o[aggregation] for o in r.json()["data"]] == values, aggregation
    # mode: the most frequent value; 03:00 holds 40 and 50 once each
    r = requests.get(url, auth=auth, params=dict(hourly, aggregation="mode"))
    assert r.status_code == 200, r.text
    modes = [o["mode"] for o in r.json()["data"]]
    assert modes[:2] == [10, 20] and modes[2] in (40, 50) and len(modes) == 3, modes
    # distinct: each distinct value of an interval, at the interval's time
    r = requests.get(url, auth=auth, params=dict(hourly, aggregation="distinct"))
    assert r.status_code == 200, r.text
    assert [(o["time"][11:16], o["distinct"]) for o in r.json()["data"]] == [
        ("00:00", 10), ("01:00", 20), ("03:00", 40), ("03:00", 50)]
