"""Schemathesis hooks of `make test-api` (loaded through SCHEMATHESIS_HOOKS).

The run uses one company admin's credentials for every request. A handful
of generated requests would take that admin's own power away mid-run
(deleting or rewriting the company admin role, taking it from the admin,
deleting the project every other operation is pointed at), after which
every later request answers 401 or 403 and tests nothing. Such requests
are redirected to the spare role, user or project that run_schemathesis.py
created for them: the operation is still called, with the same body and
query, on an object whose loss costs nothing. Ids come from the
environment (BDP_ST_*), set by run_schemathesis.py.
"""

import os

import schemathesis

ADMIN_ROLE = int(os.environ["BDP_ST_ADMIN_ROLE"])
SPARE_ROLE = int(os.environ["BDP_ST_SPARE_COMPANY_ROLE"])
ADMIN_USER = int(os.environ["BDP_ST_ADMIN_USER"])
SPARE_USER = int(os.environ["BDP_ST_SPARE_USER"])
PROJECT = int(os.environ["BDP_ST_PROJECT"])
SPARE_PROJECT = int(os.environ["BDP_ST_SPARE_PROJECT"])

# Operations that change or remove a company role, or its assignment.
COMPANY_ROLE_CHANGES = {
    ("PUT", "/v2/company/role/{role_id}"),
    ("DELETE", "/v2/company/role/{role_id}"),
    ("DELETE", "/v2/company/roles/{role_id}"),
    ("DELETE", "/v2/company/role/{role_id}/user/{user_id}"),
}


@schemathesis.hook
def map_case(context, case):
    key = (case.operation.method.upper(), case.operation.path)
    params = case.path_parameters
    if params is None:
        return case
    if key in COMPANY_ROLE_CHANGES:
        if params.get("role_id") == ADMIN_ROLE:
            params["role_id"] = SPARE_ROLE
        if params.get("user_id") == ADMIN_USER:
            params["user_id"] = SPARE_USER
    if key == ("DELETE", "/v2/project/{project_id}") and params.get("project_id") == PROJECT:
        params["project_id"] = SPARE_PROJECT
    return case
