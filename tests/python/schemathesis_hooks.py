"""Schemathesis hooks of `make test-api` (loaded through SCHEMATHESIS_HOOKS).

Most generated project ids are the id of the one project the seed data
lives in (run_schemathesis.py's dictionaries), so that requests get past
the permission check to the handlers. A DELETE /v2/project/{project_id}
on that project would end that for every later request (403: the project
is gone), so it is sent to the spare project instead: the operation is
still called, with the same query, on a project whose loss costs nothing.
The admin's own roles need no such care: the server refuses to change or
delete an admin role, or to take the company admin role from its last
holder (409), and the run checks exactly that.
"""

import os

import schemathesis

PROJECT = int(os.environ["BDP_ST_PROJECT"])
SPARE_PROJECT = int(os.environ["BDP_ST_SPARE_PROJECT"])


@schemathesis.hook
def map_case(context, case):
    params = case.path_parameters
    if (case.operation.method.upper(), case.operation.path) == ("DELETE", "/v2/project/{project_id}") \
            and params and params.get("project_id") == PROJECT:
        params["project_id"] = SPARE_PROJECT
    return case
