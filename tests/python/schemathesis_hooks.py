"""Schemathesis hooks of `make test-api` (loaded through SCHEMATHESIS_HOOKS).

Generated ids are mostly those of the seed data (run_schemathesis.py's
dictionaries), so that requests get past the permission check to the
handlers. Two generated requests would take the calling admin's own power
away for the rest of the run, after which every request answers 403 and
tests nothing; they are redirected, with the same query and body, to an
object whose loss costs nothing:
- DELETE /v2/project/{project_id} on the seeded project goes to the spare
  project;
- DELETE /v2/company/role/{role_id}/user/{user_id} taking the company
  admin role from the admin goes to the spare user. (The server refuses
  to take it from its last holder, but the run may first have given it
  to the spare user, and then the admin would lose it.)
The admin roles themselves need no care: the server refuses to change or
delete them (409).
"""

import os

import schemathesis

PROJECT = int(os.environ["BDP_ST_PROJECT"])
SPARE_PROJECT = int(os.environ["BDP_ST_SPARE_PROJECT"])
ADMIN_USER = int(os.environ["BDP_ST_ADMIN_USER"])
SPARE_USER = int(os.environ["BDP_ST_SPARE_USER"])


@schemathesis.hook
def map_case(context, case):
    params = case.path_parameters
    if not params:
        return case
    key = (case.operation.method.upper(), case.operation.path)
    if key == ("DELETE", "/v2/project/{project_id}") and params.get("project_id") == PROJECT:
        params["project_id"] = SPARE_PROJECT
    if key == ("DELETE", "/v2/company/role/{role_id}/user/{user_id}") and params.get("user_id") == ADMIN_USER:
        params["user_id"] = SPARE_USER
    return case
