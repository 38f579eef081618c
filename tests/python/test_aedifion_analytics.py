"""bdp driven the way aedifion's analytics guide drives their API
(developers/api-documentation/guides-and-tutorials/analytics.md): abstract
components, a mapped component, the analysis functions of a component, an
analysis instance, a run, its results and a result's detail, with the
guide's requests. Where api.md or decisions.md decide otherwise
(decisions.md 10), the test says so.
"""

import time

import requests

from test_aedifion_clients import new_project


def test_analytics_guide(api_url, admin):
    auth = (admin.email, admin.password)
    project_id = new_project(api_url, auth, admin.company_id, "Analytics")
    # A room's operative temperature over a day, hourly: 20 °C, then 26 °C
    # from noon.
    observations = [{"time": f"2024-01-01T{h:02d}:00:00Z", "value": 20.0 if h < 12 else 26.0} for h in range(24)]
    r = requests.post(f"{api_url}/v2/project/{project_id}/timeseries", auth=auth, json={"room_1_temperature": observations})
    assert r.status_code == 200, r.text

    # Abstract components: bdp's have an alphanumeric_id beside the names
    # (api.md 2.14), which the guide's later calls use.
    r = requests.get(f"{api_url}/v2/components", auth=auth)
    assert r.status_code == 200, r.text
    room_component = next(c for c in r.json() if c["alphanumeric_id"] == "room")
    assert {"id", "nameDE", "nameEN"} <= set(room_component)

    # A mapped component, its operative temperature pin on the datapoint
    # (decisions.md 8 bodies; the guide leaves them out).
    r = requests.post(f"{api_url}/v2/project/{project_id}/componentInProject", auth=auth,
                      json={"component_id": room_component["id"], "nameEN": "Room 1"})
    assert r.status_code == 200, r.text
    room = r.json()["resource"]
    pin = next(p for p in room["pins"] if p["alphanumeric_id"] == "operative_temperature")
    r = requests.post(f"{api_url}/v2/project/{project_id}/componentInProject/pin/datapoint", auth=auth,
                      json={"componentinproject_id": room["id"], "pin_id": pin["id"], "dataPointID": "room_1_temperature"})
    assert r.status_code == 200, r.text

    # The analysis functions of the component: the guide's query parameter
    # "component" is api.md's component_alphanumeric_id.
    r = requests.get(f"{api_url}/v2/analytics/functions", auth=auth, params={"component_alphanumeric_id": "room"})
    assert r.status_code == 200, r.text
    comfort = next(f for f in r.json() if f["alphanumeric_id"] == "thermal_comfort_analysis")
    assert {"id", "nameDE", "nameEN"} <= set(comfort)

    # An analysis instance (aedifion's NewInstanceConfig; answered in the
    # envelope of decisions.md 8), read back as the guide does.
    r = requests.post(f"{api_url}/v2/analytics/instance", auth=auth, params={"project_id": project_id}, json={
        "analysisfunction_id": comfort["id"], "componentinproject_id": room["id"],
        "description": "thermal_comfort_on_room_1", "name": "tc_on_room_1", "enabled": False})
    assert r.status_code == 200, r.text
    instance_id = r.json()["resource"]["id"]
    r = requests.get(f"{api_url}/v2/analytics/instance/{instance_id}", auth=auth, params={"project_id": project_id})
    assert r.status_code == 200, r.text
    assert r.json() == {"id": instance_id, "project_id": project_id, "config": {
        "analysisfunction_id": comfort["id"], "componentinproject_id": room["id"],
        "description": "thermal_comfort_on_room_1", "name": "tc_on_room_1", "enabled": False}}
    r = requests.get(f"{api_url}/v2/analytics/instances", auth=auth, params={"project_id": project_id})
    assert r.status_code == 200, r.text
    assert [i["id"] for i in r.json()["items"]] == [instance_id]

    # A run over the day: answered at once, computed by the server's
    # analysis runners.
    r = requests.post(f"{api_url}/v2/analytics/instance/{instance_id}/run", auth=auth, params={
        "project_id": project_id, "start": "2024-01-01T00:00:00Z", "end": "2024-01-02T00:00:00Z"})
    assert r.status_code == 200, r.text
    run = r.json()
    assert run["success"] is True and run["operation"] == "create"
    result_id = run["resource"]["result_id"]
    assert run["resource"]["status"] == "running"

    # The instance's results; the guide shows "Success." and times with a
    # space, api.md 3.4 "Success" and bdp RFC 3339.
    deadline = time.monotonic() + 60
    while True:
        r = requests.get(f"{api_url}/v2/analytics/instance/{instance_id}/results", auth=auth, params={"project_id": project_id})
        assert r.status_code == 200, r.text
        results = r.json()
        assert [x["result_id"] for x in results] == [result_id]
        if results[0]["status"] != "running" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert results[0]["status"] == "Success", results
    assert results[0]["input_parameters"] == {"start": "2024-01-01T00:00:00Z", "end": "2024-01-02T00:00:00Z"}

    # The detail in English: the guide's KPIs (name, unit, value),
    # interpretation, recommendations and signal color, flat as api.md
    # 2.17 has it rather than nested under results/evaluations.
    r = requests.get(f"{api_url}/v2/analytics/instance/{instance_id}/result/{result_id}", auth=auth,
                     params={"project_id": project_id, "result_language": "en"})
    assert r.status_code == 200, r.text
    detail = r.json()
    assert detail["status"] == "Success"
    assert detail["function_name"] == comfort["nameEN"] and detail["alphanumeric_id"] == "thermal_comfort_analysis"
    assert detail["instance_id"] == instance_id and detail["project_id"] == project_id
    assert detail["signal_color"] in ("red", "yellow", "green")
    assert isinstance(detail["interpretation"], str) and detail["interpretation"]
    assert all(isinstance(x, str) for x in detail["recommendation"])
    kpis = {k["identifier"]: k for k in detail["kpi"]}
    assert {"name", "unit", "value"} <= set(kpis["operative temperature.mean"])
    # Twelve hours at 20 °C and twelve at 26 °C.
    assert kpis["operative temperature.mean"]["value"] == 23 and kpis["operative temperature.mean"]["unit"] == "°C"
    assert kpis["operative temperature.maximum"]["value"] == 26
    assert detail["plots"] and detail["summary_kpi"]["current"]["time_reference"] == "2024-01-01T00:00:00Z/2024-01-02T00:00:00Z"

    # In German and imperial units.
    r = requests.get(f"{api_url}/v2/analytics/instance/{instance_id}/result/{result_id}", auth=auth,
                     params={"project_id": project_id, "result_language": "de", "units_system": "imperial"})
    assert r.status_code == 200, r.text
    german = r.json()
    assert german["function_name"] == comfort["nameDE"] and german["interpretation"] != detail["interpretation"]
    mean = next(k for k in german["kpi"] if k["identifier"] == "operative temperature.mean")
    assert mean["unit"] == "°F" and abs(mean["value"] - 73.4) < 1e-9
    # The interpretation states the mean as the KPI list shows it: in °F,
    # with a German decimal comma.
    assert "73,4 °F" in german["interpretation"] and "°C" not in german["interpretation"], german["interpretation"]
