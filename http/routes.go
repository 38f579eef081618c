package http

import (
	"slices"

	"github.com/gofiber/fiber/v2"
	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/controls"
	"github.com/openbdp/bdp/edge"

	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/units"
)

// v2Routes declares every /v2 endpoint, once. Order does not matter for
// ids (they are persisted by method and path) but is the order of the
// OpenAPI document.
func v2Routes(s *Server) []*route {
	const meta, user, company, project, general = store.TagMeta, store.TagUser, store.TagCompany, store.TagProject, store.TagGeneral
	return slices.Concat([]*route{
		// Meta: no credentials.
		{Method: "GET", Path: "/v2/meta/endpoints", Tag: meta, Summary: "List the endpoint catalog (ids for roles)",
			Resp: []endpointEntry{}, Handle: s.listEndpoints},
		{Method: "GET", Path: "/v2/openapi.json", Tag: meta, Summary: "This OpenAPI document",
			Resp: map[string]any{}, Handle: s.serveOpenAPI},
		{Method: "GET", Path: "/v2/meta/mqtt", Tag: meta, Summary: "Where the MQTT broker listens (TCP, WebSocket, TLS), for clients such as the browser UI's live values (beyond api.md)",
			Doc: "The embedded broker's listeners with URLs on the host name the request was addressed to; an external broker (BDP_MQTT_EXTERNAL) lists none. " +
				"Credentials come from POST /v2/project/{project_id}/mqttuser; live observations are published to project/{project_id}/datapoint/{dataPointID}.",
			Resp: mqttListenersAnswer{}, Handle: s.mqttMeta},
		{Method: "POST", Path: "/v2/auth/token", Tag: meta, Summary: "Issue a bearer token (Basic credentials or OAuth2 password grant)",
			Body: tokenForm{}, Resp: tokenResponse{}, Handle: s.issueToken},
		{Method: "POST", Path: "/v2/user/token", Tag: meta, Summary: "Issue a bearer token (same as POST /v2/auth/token, the path aedifion's clients use)",
			Body: tokenForm{}, Resp: tokenResponse{}, Handle: s.issueToken},

		// The calling user.
		{Method: "GET", Path: "/v2/user", Tag: user, Summary: "The calling user with their roles and company",
			Resp: userWithContext{}, Handle: s.getUser},
		{Method: "PUT", Path: "/v2/user", Tag: user, Op: "update",
			Summary: "Change the calling user's profile; a password field is refused (400): the password changes through PUT /v2/user/password",
			Body:    updateUserRequest{}, RefusedBody: refusedUserFields, Resp: envelopeOf[store.UserSummary]{}, Handle: s.updateUser},
		{Method: "DELETE", Path: "/v2/user", Tag: user, Op: "delete", Summary: "Delete the calling user",
			Resp: envelopeOf[store.UserSummary]{}, Handle: s.deleteUser},
		{Method: "PUT", Path: "/v2/user/password", Tag: user, Op: "update",
			Summary: "Change the calling user's password (JSON, or form-encoded as aedifion's clients send it); 400 when current_password is wrong",
			Body:    passwordRequest{}, FormToo: true, Resp: envelopeOf[struct{}]{}, Handle: s.changePassword},
		{Method: "GET", Path: "/v2/user/projects", Tag: user, Summary: "Projects the calling user may use, each with its company and datapoint keys (aedifion's ProjectWithContext)",
			Resp: []projectWithContext{}, Handle: s.userProjects},

		// Company administration.
		{Method: "GET", Path: "/v2/company", Tag: company, Summary: "The caller's company with its projects and users",
			Resp: companyResponse{}, Handle: s.getCompany},
		{Method: "POST", Path: "/v2/company/project", Tag: company, Op: "create", Summary: "Create a project (its admin role goes to the caller)",
			Body: createProjectRequest{}, Resp: envelopeOf[projectCreated]{}, Handle: s.createProject},
		{Method: "POST", Path: "/v2/project", Tag: company, Op: "create", Summary: "Create a project (same as POST /v2/company/project)",
			Body: createProjectRequest{}, Resp: envelopeOf[projectCreated]{}, Handle: s.createProject},
		{Method: "POST", Path: "/v2/company/user", Tag: company, Op: "create", Summary: "Create a user of the caller's company (no roles)",
			Body: createUserRequest{}, RefusedBody: refusedUserFields, Resp: envelopeOf[store.UserSummary]{}, Handle: s.createUser},
		{Method: "POST", Path: "/v2/user", Tag: company, Op: "create", Summary: "Create a user (same as POST /v2/company/user)",
			Body: createUserRequest{}, RefusedBody: refusedUserFields, Resp: envelopeOf[store.UserSummary]{}, Handle: s.createUser},
		{Method: "GET", Path: "/v2/company/roles", Tag: company, Summary: "List the company roles",
			Resp: []store.CompanyRole{}, Handle: s.listCompanyRoles},
		{Method: "POST", Path: "/v2/company/role", Tag: company, Op: "create", Summary: "Create a company role",
			Body: companyRoleRequest{}, Resp: envelopeOf[store.CompanyRole]{}, Handle: s.createCompanyRole},
		{Method: "PUT", Path: "/v2/company/role/{role_id}", Tag: company, Op: "update", Summary: "Change a company role (lists are replaced)",
			Body: companyRoleUpdate{}, Resp: envelopeOf[store.CompanyRole]{}, Handle: s.updateCompanyRole},
		{Method: "DELETE", Path: "/v2/company/role/{role_id}", Tag: company, Op: "delete", Summary: "Delete a company role and its assignments",
			Resp: envelopeOf[store.CompanyRole]{}, Handle: s.deleteCompanyRole},
		{Method: "DELETE", Path: "/v2/company/roles/{role_id}", Tag: company, Op: "delete", Summary: "Delete a company role (same as DELETE /v2/company/role/{role_id})",
			Resp: envelopeOf[store.CompanyRole]{}, Handle: s.deleteCompanyRole},
		{Method: "POST", Path: "/v2/company/role/{role_id}/user/{user_id}", Tag: company, Op: "create", Summary: "Assign a company role to a user",
			Resp: envelopeOf[companyAssignment]{}, Handle: s.assignCompanyRole},
		{Method: "DELETE", Path: "/v2/company/role/{role_id}/user/{user_id}", Tag: company, Op: "delete", Summary: "Take a company role from a user",
			Resp: envelopeOf[companyAssignment]{}, Handle: s.unassignCompanyRole},

		// Projects.
		{Method: "GET", Path: "/v2/project/{project_id}", Tag: project, Summary: "A project with its company, its datapoint keys and the ids of its datapoints",
			Resp: projectDetail{}, Handle: s.getProject},
		{Method: "PUT", Path: "/v2/project/{project_id}", Tag: project, Op: "update", Summary: "Change name or description of a project",
			Body: updateProjectRequest{}, RefusedBody: []string{"account_manager_id", "address", "asset_manager_id", "currency_system",
				"latitude", "longitude", "project_engineer_id", "start", "status_report", "units_system"}, Resp: envelopeOf[store.Project]{}, Handle: s.updateProject},
		{Method: "DELETE", Path: "/v2/project/{project_id}", Tag: project, Op: "delete", Summary: "Delete a project with everything in it",
			Query: []param{{Name: "project_name", Type: "string", Doc: "when given, the project's exact name, as a safeguard: " +
				"400 and nothing deleted when it differs (aedifion's clients always send it)"}},
			Resp: envelopeOf[store.Project]{}, Handle: s.deleteProject,
			Errors: map[int]string{403: "no grant of this endpoint, or no write access by TagAuth to some datapoint of the project (the outputs of its virtual datapoints included), " +
				"which deleting it would delete; the message names one; nothing is deleted"}},
		{Method: "GET", Path: "/v2/project/{project_id}/datapointkeys", Tag: project, Summary: "Keys the project's datapoints are looked up by: name first, then the tag keys in use",
			Resp: []store.DatapointKey{}, Handle: s.datapointKeys},
		{Method: "GET", Path: "/v2/datapoint", Tag: project,
			Summary: "A datapoint with its setpoint bounds (null: none set); needs read access to it by TagAuth (aedifion's GET /v2/datapoint, its setpoint fields)",
			Query:   datapointParams, Resp: store.DatapointSetpoints{}, Handle: s.getDatapoint,
			Errors: map[int]string{404: "the project has no such datapoint"}},
		{Method: "PUT", Path: "/v2/datapoint", Tag: project, Op: "update",
			Summary: "Set the setpoint bounds of a datapoint (both required, finite, min <= max; a datapoint without data yet is created), or clear them (both null); needs write access to it by TagAuth",
			Query:   datapointParams, Body: setpointBounds{}, RefusedBody: []string{"writable"}, Resp: envelopeOf[store.DatapointSetpoints]{}, Handle: s.updateDatapoint},
		{Method: "POST", Path: "/v2/datapoint/setpoint", Tag: project, Op: "create",
			Summary: "Write a setpoint through the project's edge device (api.md 4.6)",
			Doc: "The safeguards, in this order: setpoint writing enabled for the project (else 403, operation post); write access to the datapoint by TagAuth (403); " +
				"setpoint bounds configured and the value within them (else 400, operation create, naming datapoint, range and value); " +
				"a priority no more urgent than the project's setpoint_max_priority (else 400, operation create). The project needs an edge device (else 403, operation post). " +
				"An unacked write answers once accepted and keeps no state; an acked one answers at once with its reference (state initialized) and moves on without " +
				"the caller: requested when the request is published to the device (at once when it is online, else when it comes online), written when the device " +
				"reports the write, failed when the device refuses it or nothing answers within 30 s. A written value reaches the datapoint's timeseries when the device " +
				"reports the present value on its data topic. An acked dry run ends in reported, never written: its status and log say that nothing was written. " +
				"With the embedded broker a device whose MQTT connection ended is offline at once: a write waiting for its answer fails then, and until it " +
				"connects again writes fail at once (nothing was sent) and dry runs answer 503.",
			Query: setpointParams, Resp: envelopeOf[setpointResource]{}, Handle: s.writeSetpoint,
			Errors: map[int]string{503: "a dry run whose edge device is offline or does not answer within 30 s"}},
		{Method: "GET", Path: "/v2/datapoint/setpoint/{reference}", Tag: general,
			Summary: "An acked setpoint operation with its log (needs this endpoint in the operation's project and read access to its datapoint by TagAuth)",
			Resp:    setpointOperation{}, Handle: s.getSetpoint,
			Errors: map[int]string{404: "no operation with this reference in the caller's company (unacked writes keep none)"}},
		{Method: "GET", Path: "/v2/project/{project_id}/edge", Tag: project,
			Summary: "The project's edge device connection: configured, online (heartbeat within 15 s), last heartbeat, pending requests",
			Resp:    edge.Status{}, Handle: s.getProjectEdge},
		{Method: "GET", Path: "/v2/project/{project_id}/alerts", Tag: project,
			Summary: "Virtual datapoints that need attention, newest first: those in a failure state (Creation, Start, Stop or Delete failed, " +
				"Health check failed; type virtual_datapoint_status) and those with a calculation error logged in the last 24 hours " +
				"(type calculation_error, the newest one); only those whose output the caller may read",
			Query: alertParams, RefusedQuery: []string{"search", "filter", "sort_order", "sort_by"}, Resp: alertList{}, Handle: s.listAlerts},

		// Timeseries.
		{Method: "POST", Path: "/v2/project/{project_id}/timeseries", Tag: project, Summary: "Upload observations (all or nothing)",
			Body: uploadBody{}, Resp: envelopeOf[struct{}]{}, LargeBody: true, Handle: s.uploadTimeseries},
		{Method: "POST", Path: "/v2/project/{project_id}/importTimeseries", Tag: project, Op: "create",
			Summary: "Import observations from a CSV file (form field import_file), streamed; on_error abort stores nothing when a line fails",
			Query:   importParams, RefusedQuery: []string{"time_precision"}, Body: importForm{}, Resp: envelopeOf[importResult]{}, StreamBody: true, Handle: s.importTimeseries},
		{Method: "GET", Path: "/v2/datapoint/timeseries", Tag: project,
			Summary: "Read observations of a datapoint: window, limit, down-sampling with interpolation, unit and currency conversion, " +
				"short form, closed interval",
			Query: slices.Concat(timeseriesParams, exportCompatParams), Resp: timeseriesAnswer{}, RespAlt: shortAnswerSchema, Handle: s.readTimeseries,
			Errors: map[int]string{422: "a unit or currency conversion that cannot be done (no units tag, incompatible target)"}},
		{Method: "GET", Path: "/v2/labels/systems", Tag: general, Summary: "Units systems and currency systems for units_system and currency_system",
			Resp: units.SystemsList{}, Handle: s.labelSystems},
		{Method: "GET", Path: "/v2/labels/definitions", Tag: general, Summary: "Label tree: the leaves below units are the usable unit names",
			Query: []param{{Name: "language", Type: "string", Doc: "en, the only language of bdp's labels (the default); " +
				"de and fr, which aedifion's API offers, answer 400"}},
			Resp: labelTree{}, Handle: s.labelDefinitions},

		// Analytics catalog (api.md 2.14, 4.8): shipped with the binary.
		{Method: "GET", Path: "/v2/components", Tag: general, Summary: "The abstract components of the analytics catalog",
			Doc: "Numeric ids are assigned by this server and stay with their component across restarts and releases; " +
				"alphanumeric ids are the same on every server.",
			RefusedQuery: []string{"language"}, Resp: []componentEntry{}, Handle: s.listComponents},
		{Method: "GET", Path: "/v2/component/{component_id}/pins", Tag: general, Summary: "The pin placeholders of a component",
			Doc:          "Each pin's pin_attributes classify the datapoint it expects (L1_analog_digital to L5_unit) with a probability from 0 to 1.",
			RefusedQuery: []string{"language"}, Resp: []store.CatalogPin{}, Handle: s.componentPins,
			Errors: map[int]string{404: "no component with this id"}},
		{Method: "GET", Path: "/v2/component/{component_id}/attributeDefinitions", Tag: general,
			Summary:      "The attribute definitions of a component (value_type float, string or json)",
			RefusedQuery: []string{"language"}, Resp: []store.AttributeDefinition{}, Handle: s.componentAttributeDefinitions,
			Errors: map[int]string{404: "no component with this id"}},

		{Method: "GET", Path: "/v2/analytics/functions", Tag: general, Summary: "The analysis functions, all or those fitting one component",
			Doc: "Each function lists the pins and attribute definitions it reads, the KPIs it reports and execution_schedule " +
				"\"weekly\" (an enabled instance runs each Monday 00:00 UTC over the week before). Numeric ids are assigned by this " +
				"server and stay with their function across restarts and releases. With both component parameters they must name " +
				"the same component.",
			Query: []param{
				{Name: "component_alphanumeric_id", Type: "string", Doc: "only the functions that fit this component (GET /v2/components)", MaxLength: 200},
				{Name: "component_id", Type: "integer", Doc: "only the functions that fit the component with this id"},
				{Name: "language", Type: "string", Doc: "en (the default) or de: the language of name"},
			},
			Resp: []analysisFunctionEntry{}, Handle: s.listAnalysisFunctions,
			Errors: map[int]string{404: "no component with this id or alphanumeric id"}},

		// Component mapping (api.md 2.15, 4.8; bodies: decisions.md 8).
		{Method: "POST", Path: "/v2/project/{project_id}/componentInProject", Tag: project, Op: "create",
			Summary: "Map a catalog component into the project", Body: cipRequest{}, Resp: envelopeOf[cipDetail]{}, Query: queryParams(cipRequest{}, cipCreateQuery()...), RefusedBody: []string{"abbreviation", "name"}, Handle: s.createComponentInProject,
			Errors: map[int]string{404: "no component with this component_id"}},
		{Method: "GET", Path: "/v2/project/{project_id}/componentsInProject", Tag: project, Summary: "The project's mapped components",
			Resp: cipList{}, RefusedQuery: []string{"filter", "language", "search", "sort_by", "sort_order"}, Handle: s.listComponentsInProject},
		{Method: "GET", Path: "/v2/project/{project_id}/componentInProject/{componentinproject_id}", Tag: project,
			Summary: "A mapped component: its pins (a mapped datapoint shown only to a caller who may read it) and attribute values",
			Resp:    cipDetail{}, RefusedQuery: []string{"language"}, Handle: s.getComponentInProject},
		{Method: "POST", Path: "/v2/project/{project_id}/componentInProject/pin/datapoint", Tag: project, Op: "create",
			Summary: "Map a datapoint the caller may read onto a pin not mapped yet (a datapoint may serve pins of several components)",
			Body:    pinMappingRequest{}, Resp: envelopeOf[cipDetail]{}, Query: queryParams(pinMappingRequest{}, pinMappingQuery()...), RefusedQuery: []string{"language"}, Handle: s.mapPin(store.MapCreate),
			Errors: map[int]string{409: "the pin is mapped already (PUT changes it), or a controls app on the component is running (the message names it): stop it, change the component, run it again", 404: "no such component in project, pin of its component, or datapoint"}},
		{Method: "PUT", Path: "/v2/project/{project_id}/componentInProject/pin/datapoint", Tag: project, Op: "update",
			Summary: "Map another datapoint the caller may read onto a mapped pin",
			Body:    pinMappingRequest{}, Resp: envelopeOf[cipDetail]{}, Query: queryParams(pinMappingRequest{}, pinMappingQuery()...), RefusedQuery: []string{"language"}, Handle: s.mapPin(store.MapReplace),
			Errors: map[int]string{404: "no such component in project, pin of its component, datapoint, or the pin is not mapped", 409: "a controls app on the component is running (the message names it): stop it, change the component, run it again"}},
		{Method: "DELETE", Path: "/v2/project/{project_id}/componentInProject/pin/datapoint", Tag: project, Op: "delete",
			Summary: "Unmap a pin", Body: pinUnmapRequest{}, Resp: envelopeOf[cipDetail]{}, Query: queryParams(pinUnmapRequest{}, pinUnmapQuery()...), RefusedQuery: []string{"language"}, Handle: s.unmapPin,
			Errors: map[int]string{404: "no such component in project or pin, or the pin is not mapped", 409: "a controls app on the component is running (the message names it): stop it, change the component, run it again"}},
		{Method: "POST", Path: "/v2/project/{project_id}/componentInProject/attribute", Tag: project, Op: "create",
			Summary: "Give an attribute without a value its value, checked against the definition's value_type",
			Body:    attributeRequest{}, Resp: envelopeOf[cipDetail]{}, Query: queryParams(attributeRequest{}, attributeQuery()...), RefusedBody: []string{"unit"}, Handle: s.setAttribute(store.MapCreate),
			Errors: map[int]string{400: "a value not of the definition's value_type, or one a controls algorithm refuses (GET /v2/controls/algorithms has the formats)", 409: "the attribute has a value already (PUT changes it), or a controls app on the component is running (the message names it): stop it, change the component, run it again",
				404: "no such component in project or attribute key"}},
		{Method: "PUT", Path: "/v2/project/{project_id}/componentInProject/attribute", Tag: project, Op: "update",
			Summary: "Change an attribute's value, checked against the definition's value_type",
			Body:    attributeRequest{}, Resp: envelopeOf[cipDetail]{}, Query: queryParams(attributeRequest{}, attributeQuery()...), RefusedQuery: []string{"unit"}, Handle: s.setAttribute(store.MapReplace),
			Errors: map[int]string{400: "a value not of the definition's value_type, or one a controls algorithm refuses (GET /v2/controls/algorithms has the formats)", 404: "no such component in project or attribute key, or no value yet", 409: "a controls app on the component is running (the message names it): stop it, change the component, run it again"}},
		{Method: "DELETE", Path: "/v2/project/{project_id}/componentInProject/attribute", Tag: project, Op: "delete",
			Summary: "Remove an attribute's value", Body: attributeDeleteRequest{}, Resp: envelopeOf[cipDetail]{}, Query: queryParams(attributeDeleteRequest{}, attributeDeleteQuery()...), Handle: s.deleteAttribute,
			Errors: map[int]string{404: "no such component in project or attribute key, or no value", 409: "a controls app on the component is running (the message names it): stop it, change the component, run it again"}},
		// After the attribute routes: fiber matches in order, and
		// componentInProject/attribute would be taken for an id.
		{Method: "PUT", Path: "/v2/project/{project_id}/componentInProject/{componentinproject_id}", Tag: project, Op: "update",
			Summary: "Rename a mapped component (nameEN, nameDE, display_name); component_id cannot change",
			Body:    cipUpdate{}, Resp: envelopeOf[cipDetail]{}, RefusedBody: []string{"abbreviation", "name"}, Handle: s.updateComponentInProject},
		{Method: "DELETE", Path: "/v2/project/{project_id}/componentInProject/{componentinproject_id}", Tag: project, Op: "delete",
			Summary: "Delete a mapped component with its pin mappings, attribute values and the controls apps on it", Resp: envelopeOf[cipDetail]{}, Handle: s.deleteComponentInProject,
			Errors: map[int]string{409: "a controls app on the component is running (stop it first)"}},

		// Analysis instances and results (api.md 2.16, 2.17, 4.8; decisions.md 8).
		{Method: "POST", Path: "/v2/analytics/instance", Tag: project, Op: "create",
			Summary: "Create an analysis instance: a function on a component mapped into the project (one per function and component)",
			Doc:     instanceDoc, Query: []param{projectQuery}, Body: instanceRequest{}, RefusedBody: refusedInstanceBody,
			Resp: envelopeOf[analysisInstance]{}, Handle: s.createAnalysisInstance,
			Errors: map[int]string{400: "a function that does not fit the component", 404: "no such analysis function, or no such component in the project",
				409: "the function has an instance on the component already (the message names both ids)"}},
		{Method: "GET", Path: "/v2/analytics/instances", Tag: project, Summary: "The project's analysis instances",
			Query: []param{projectQuery}, Resp: instanceList{}, Handle: s.listAnalysisInstances},
		{Method: "GET", Path: "/v2/analytics/instance/{instance_id}", Tag: project, Summary: "An analysis instance",
			Query: []param{projectQuery}, Resp: analysisInstance{}, Handle: s.getAnalysisInstance,
			Errors: map[int]string{404: "the project has no such instance"}},
		{Method: "PUT", Path: "/v2/analytics/instance/{instance_id}", Tag: project, Op: "update",
			Summary: "Change name, description or enabled of an analysis instance; its function and component are fixed",
			Doc:     instanceDoc, Query: []param{projectQuery}, Body: instanceUpdate{}, RefusedBody: refusedInstanceBody,
			Resp: envelopeOf[analysisInstance]{}, Handle: s.updateAnalysisInstance,
			Errors: map[int]string{400: "analysisfunction_id or componentinproject_id other than the instance's", 404: "the project has no such instance"}},
		{Method: "DELETE", Path: "/v2/analytics/instance/{instance_id}", Tag: project, Op: "delete",
			Summary: "Delete an analysis instance with all its results (a queued run of it is dropped)",
			Query:   []param{projectQuery}, Resp: envelopeOf[analysisInstance]{}, Handle: s.deleteAnalysisInstance,
			Errors: map[int]string{404: "the project has no such instance"}},
		{Method: "POST", Path: "/v2/analytics/instance/{instance_id}/run", Tag: project, Op: "create",
			Summary: "Run an analysis instance over [start, end) (at most 366 days): answers at once with the new result's id, status running",
			Doc: "The result is queued in the database and computed off the request by the analysis runners of any node; its status " +
				"moves from running to Success or Failed (GET .../result/{result_id}). Disabled instances run by hand too. " +
				"A node computes BDP_ANALYSIS_WORKERS runs at once, the others wait in the database. A run fails, with the reason " +
				"in info, when a required pin is not mapped, an attribute's value is unusable, the function is no longer in the " +
				"release, the analysis fails internally, or it takes longer than 5 minutes.",
			Query: []param{projectQuery, {Name: "start", Type: "string", Required: true, Doc: "RFC 3339 (2024-03-04T00:00:00Z), included"},
				{Name: "end", Type: "string", Required: true, Doc: "RFC 3339, after start, at most 366 days after it; excluded"}},
			Resp: envelopeOf[runAccepted]{}, Handle: s.runAnalysisInstance,
			Errors: map[int]string{403: readable403, 400: "start or end missing or not RFC 3339, start not before end, or a period longer than 366 days",
				404: "the project has no such instance"}},
		{Method: "GET", Path: "/v2/analytics/instance/{instance_id}/results", Tag: project,
			Summary: "The results of an analysis instance, newest period first (aedifion's AnalysisResultSummary)",
			Query:   []param{projectQuery, resultLanguageQuery}, RefusedQuery: []string{"units_system", "currency_system"},
			Resp: []resultSummary{}, Handle: s.listInstanceResults,
			Errors: map[int]string{403: readable403, 404: "the project has no such instance"}},
		{Method: "GET", Path: "/v2/analytics/instance/{instance_id}/result/{result_id}", Tag: project,
			Summary: "A result of an analysis instance: KPIs, plots, signal color, interpretation, recommendations and summary KPI",
			Doc:     resultDoc, Query: []param{projectQuery, resultLanguageQuery, unitsSystemQuery, currencySystemQuery},
			Resp: resultDetail{}, Handle: s.getInstanceResult,
			Errors: map[int]string{403: readable403, 400: "result_id not a uuid, result_language not en or de, an unknown units_system or currency_system",
				404: "the instance has no such result", 422: "a currency the operator's exchange rates lack"}},
		{Method: "GET", Path: "/v2/analytics/componentsInProject", Tag: project,
			Summary: "The latest result of each instance, grouped by mapped component (components without a result left out; aedifion's AnalyticsResultsForComponents)",
			Doc:     latestDoc, Query: groupedQuery, RefusedQuery: []string{"search", "filter"},
			Resp: componentsWithResults{}, Handle: s.analyticsComponentsInProject,
			Errors: map[int]string{422: "a currency the operator's exchange rates lack"}},
		{Method: "GET", Path: "/v2/analytics/componentInProject/{componentinproject_id}/results", Tag: project,
			Summary: "A mapped component with the latest result of each of its instances, and every instance with all its result ids (aedifion's AnalyticsResultsForComponent)",
			Doc:     latestDoc, Query: []param{projectQuery, languageQuery, unitsSystemQuery, currencySystemQuery},
			Resp: componentResults{}, Handle: s.analyticsComponentResults,
			Errors: map[int]string{403: readable403, 404: "the project has no such component in project", 422: "a currency the operator's exchange rates lack"}},
		{Method: "GET", Path: "/v2/analytics/results", Tag: project,
			Summary: "Every analysis instance with its latest result (null when it has none), grouped by mapped component",
			Doc:     latestDoc, Query: groupedQuery, Resp: allResults{}, Handle: s.analyticsResults,
			Errors: map[int]string{422: "a currency the operator's exchange rates lack"}},

		// Controls apps (api.md 2.13, 3.2, 4.6; decisions.md 8): controlsapps.go.
		{Method: "GET", Path: "/v2/controls/algorithms", Tag: general,
			Summary: "The controls algorithms: the components each fits, the pins it writes and reads, and the attributes it reads with their formats",
			Doc: "The formats are the rules applied when an attribute is written (400 naming the mistake) and at each run. " +
				"While an app runs, its component's pins and attributes cannot change (409 naming the app): stop it, change them, run it again.",
			RefusedQuery: []string{"language"}, Resp: []controls.AlgorithmSpec{}, Handle: s.listControlsAlgorithms},
		{Method: "GET", Path: "/v2/controls/algorithms_by_component", Tag: general,
			Summary: "The same facts in aedifion's shape: component alphanumeric id -> algorithm -> variation (default) -> {attributes, pins: {input, output}}",
			Query: []param{{Name: "component_alphanumeric_ids", Type: "string", Doc: "repeated: only these components"},
				{Name: "algorithms", Type: "string", Doc: "repeated: only these algorithms"}},
			RefusedQuery: []string{"language"}, Resp: map[string]map[string]map[string]algorithmVariation{}, Handle: s.algorithmsByComponent},
		{Method: "POST", Path: "/v2/controls/app", Tag: project, Op: "create",
			Summary: "Create a controls app on a mapped component (status 100 Created; it does not start by itself)",
			Doc:     controlsAppDoc, Query: controlsAppCreateParams, Body: controlsAppBody{}, Resp: envelopeOf[controlsAppObject]{}, Handle: s.createControlsApp,
			Errors: map[int]string{400: "algorithm missing or not schedule or heating_curve, an algorithm that does not fit the component, " +
				"a variation other than default, bad setpoint_writing_params, or an attribute of the component the algorithm reads that does not parse " +
				"(a setpoint_schedule entry that does not parse or overlaps another)", 404: "the project has no such component in project"}},
		{Method: "GET", Path: "/v2/controls/apps", Tag: project, Summary: "The project's controls apps",
			Query: []param{projectQuery, {Name: "search", Type: "string", Doc: "text within the name (case insensitive)", MaxLength: maxTextLen},
				{Name: "filter", Type: "string", Doc: "key=value pairs separated by ';' (keys status_code, algorithm, component_in_project_id); the same key ORed, different keys ANDed"},
				{Name: "page", Type: "integer", Doc: "default 1"}, {Name: "per_page", Type: "integer", Doc: "default 100, at most 1000"}},
			RefusedQuery: []string{"language"}, Resp: appList{}, Handle: s.listControlsApps},
		{Method: "POST", Path: "/v2/controls/apps/run", Tag: project,
			Summary: "Run or stop several controls apps: body {controls_app_ids, run}; no ids: every app of the project",
			Doc: "Every app is checked first, as POST /v2/controls/app/{controls_app_id}/run checks one; a refusal names the app and changes nothing " +
				"(two apps of the list writing one datapoint at one priority: 409). Then each moves in the order given; the answer lists each " +
				"app's result. aedifion's clients put controls_app_ids (repeated) and run in the query: taken too.",
			Query: []param{projectQuery, {Name: "run", Type: "boolean", Doc: "instead of run in the body"},
				{Name: "controls_app_ids", Type: "string", Doc: "repeated; added to those of the body"}},
			Body: bulkRunBody{}, Resp: []appRunResult{}, Handle: s.runControlsApps,
			Errors: map[int]string{400: "run missing, an id not a uuid, more than 1000 ids, or an app that cannot run (as for one app)",
				404: "an id the project has no app with", 409: "a target written at the same priority by another running app, or by two apps of the list"}},
		{Method: "DELETE", Path: "/v2/controls/app", Tag: project, Op: "delete",
			Summary: "Delete a controls app that is not running (409 while Starting, Running or Stopping); the answer shows status 500 Deleting",
			Query:   []param{projectQuery, {Name: "controls_app_id", Type: "string", Required: true, Doc: "uuid"}}, Resp: envelopeOf[controlsAppObject]{},
			Handle: s.deleteControlsApp, Errors: map[int]string{404: "the project has no such app", 409: "the app is running: stop it first"}},
		{Method: "GET", Path: "/v2/controls/app/{controls_app_id}", Tag: project, Summary: "A controls app (its log: GET .../logs)",
			Query: []param{projectQuery}, RefusedQuery: []string{"language"}, Resp: controlsAppObject{}, Handle: s.getControlsApp,
			Errors: map[int]string{404: "the project has no such app"}},
		{Method: "DELETE", Path: "/v2/controls/app/{controls_app_id}", Tag: project, Op: "delete",
			Summary: "Delete a controls app (same as DELETE /v2/controls/app with the id in the query)",
			Query:   []param{projectQuery}, Resp: envelopeOf[controlsAppObject]{}, Handle: s.deleteControlsApp,
			Errors: map[int]string{404: "the project has no such app", 409: "the app is running: stop it first"}},
		{Method: "POST", Path: "/v2/controls/app/{controls_app_id}/run", Tag: project,
			Summary: "Run (run=true: Starting, then Running once its actor runs) or stop (run=false: Stopping, then Stopped) a controls app",
			Doc: "A run checks that the setpoint pin is mapped onto a datapoint with setpoint bounds, that the app's priority is allowed by the project, " +
				"that the attributes the algorithm reads are set and valid, and that the caller may write the setpoint datapoint (and read the input " +
				"datapoint) by TagAuth. affected is false when the app was in the asked state already. A stop waits at most 5 s for the edge device to confirm app_stop. " +
				"A running app whose edge device's heartbeat does not list it (a replaced or factory-reset device) is sent to the device again (app_start) " +
				"and writes its value again, logged in the app's log; after a refusal it tries again at most once a minute. " +
				"When the edge device is online again after it was offline, every running app writes its value again.",
			Query: []param{projectQuery, {Name: "run", Type: "boolean", Required: true, Doc: "true runs, false stops"}},
			Resp:  appRunResult{}, Handle: s.runControlsApp,
			Errors: map[int]string{400: "setpoint pin unmapped, its datapoint without setpoint bounds, a priority more urgent than the project allows, " +
				"an attribute missing or invalid (the message names it)", 403: "no write access by TagAuth to the setpoint datapoint (or no read access to the input)",
				404: "the project has no such app", 409: "another running app writes the same datapoint at the same priority (the message names it)",
				503: "controls apps do not run on this node"}},
		{Method: "GET", Path: "/v2/controls/app/{controls_app_id}/logs", Tag: project,
			Summary: "The log of a controls app: status changes, what it wrote and what the edge device answered",
			Query: []param{projectQuery, {Name: "log_level", Type: "string", Doc: "the least severe level shown: info (default), warning or error"},
				{Name: "sort_order", Type: "string", Doc: "desc (default, newest first) or asc"},
				{Name: "start", Type: "string", Doc: "RFC 3339: entries after it"}, {Name: "end", Type: "string", Doc: "RFC 3339: entries before it"},
				{Name: "page", Type: "integer", Doc: "default 1"}, {Name: "per_page", Type: "integer", Doc: "default 100, at most 1000"}},
			RefusedQuery: []string{"language"}, Resp: appLogList{}, Handle: s.controlsAppLogs,
			Errors: map[int]string{404: "the project has no such app"}},

		// Virtual datapoints (api.md 4.5).
		{Method: "POST", Path: "/v2/project/{project_id}/virtual_datapoint", Tag: project, Op: "create",
			Summary: "Create a virtual datapoint (Created, then Ready to start; it does not start by itself)",
			Query: []param{{Name: "dataPointID", Type: "string", Doc: "the output dataPointID", Required: true},
				{Name: "type", Type: "string", Doc: "formula, gradient or absolute_humidity; absolute_air_humidity (aedifion's name) is the same type", Required: true},
				{Name: "description", Type: "string", MaxLength: maxTextLen}},
			Doc: vdpIgnoredDoc, Body: actors.Config{}, Resp: envelopeOf[vdpObject]{}, Handle: s.createVDP,
			Errors: map[int]string{400: "an invalid configuration, or one whose windows' estimated memory exceeds the per-datapoint window budget " +
				"(BDP_WINDOW_BUDGET_DATAPOINT; the message names the estimate and the limit)"}},
		{Method: "POST", Path: "/v2/project/{project_id}/virtual_datapoint/run", Tag: project,
			Summary: "Start (run=true) or stop (run=false) a virtual datapoint",
			Query:   []param{{Name: "dataPointID", Type: "string", Required: true}, {Name: "run", Type: "boolean", Required: true}},
			Resp:    vdpObject{}, Handle: s.runVDP,
			Errors: map[int]string{
				409: "the virtual datapoint's current status does not allow the move to the one asked for",
				400: "a start whose windows' estimated memory exceeds the per-datapoint window budget (BDP_WINDOW_BUDGET_DATAPOINT); the message names the estimate and the limit",
				503: "the database is unavailable (retry later), or a start that would take the windows of this node's running virtual datapoints over the node's window budget (BDP_WINDOW_BUDGET_NODE); " +
					"the message names what the running ones hold, the limit and the estimate; nothing changed, it may fit once others stop"}},
		{Method: "GET", Path: "/v2/project/{project_id}/virtual_datapoint", Tag: project,
			Summary: "A virtual datapoint with its logs (403 without read access to its output by TagAuth; a pin whose source the caller may not read " +
				"answers dataPointID null and masked true, as in every answer with pins)",
			Query: []param{{Name: "dataPointID", Type: "string", Required: true}}, Resp: vdpObject{}, Handle: s.getVDP},
		{Method: "PUT", Path: "/v2/project/{project_id}/virtual_datapoint", Tag: project, Op: "update",
			Summary: "Change the description of a virtual datapoint (the status stays)",
			Query:   []param{{Name: "dataPointID", Type: "string", Required: true}}, Body: vdpUpdate{}, Resp: vdpObject{}, Handle: s.updateVDP},
		{Method: "DELETE", Path: "/v2/project/{project_id}/virtual_datapoint", Tag: project, Op: "delete",
			Summary: "Delete a virtual datapoint that is not Starting, Running or Stopping (409 otherwise)",
			Query: []param{{Name: "dataPointID", Type: "string", Required: true},
				{Name: "purge", Type: "boolean", Doc: "true: also delete the output datapoint, with its tags and every stored observation, " +
					"in the same transaction (aedifion's purge); default false: the output's stored timeseries stays"}},
			Resp: vdpObject{}, Handle: s.deleteVDP},
		{Method: "GET", Path: "/v2/project/{project_id}/virtual_datapoints", Tag: project, Summary: "List virtual datapoints",
			Query: []param{{Name: "search", Type: "string", Doc: "text within dataPointID or description", MaxLength: maxTextLen},
				{Name: "filter", Type: "string", Doc: "status_code=N"}, {Name: "page", Type: "integer"}, {Name: "per_page", Type: "integer", Doc: "default 100, at most 1000"}},
			Resp: vdpList{}, Handle: s.listVDPs},
		{Method: "POST", Path: "/v2/project/{project_id}/virtual_datapoint/recompute", Tag: project, Op: "create", Status: fiber.StatusAccepted,
			Summary: "Recompute the outputs of [start, end) exactly from stored history (202 at once; progress and end in the logs, type recompute)",
			Query:   recomputeParams, Resp: envelopeOf[recomputeAccepted]{}, Handle: s.recomputeVDP},

		// MQTT users (api.md 4.4; the GETs and the DELETE beyond it).
		{Method: "POST", Path: "/v2/project/{project_id}/mqttuser", Tag: project, Op: "create", Status: fiber.StatusCreated,
			Summary: "Create a short-lived MQTT user of the project (default validity 3600 s, at most 7200 s)", Doc: mqttUserDoc,
			Body: mqttUserRequest{}, Resp: envelopeOf[mqttUserObject]{}, Handle: s.createMQTTUser,
			Errors: map[int]string{403: "no grant of this endpoint or project, or no TagAuth of the project giving the caller the rights asked for",
				409: "the username is taken", 503: mqttCreate503}},
		{Method: "PUT", Path: "/v2/project/{project_id}/mqttuser/{mqttuser_id}", Tag: project, Status: fiber.StatusCreated,
			Summary: "Change an MQTT user: password, rights, validity (counted from now, at most 7200 s), description; all optional; " +
				"operation is the empty string, as in api.md",
			Doc:  mqttUserChangeDoc,
			Body: mqttUserUpdate{}, Resp: envelopeOf[mqttUserObject]{}, Handle: s.updateMQTTUser,
			Errors: map[int]string{403: "no grant of this endpoint or project, no TagAuth of the project giving the caller the rights, " +
				"or the MQTT user was created by someone else and the caller holds no company role", 503: mqttChange503}},
		{Method: "GET", Path: "/v2/project/{project_id}/mqttusers", Tag: project, Summary: "List the unexpired MQTT users of the project (beyond api.md)",
			Resp: []mqttUserObject{}, Handle: s.listMQTTUsers},
		{Method: "GET", Path: "/v2/project/{project_id}/mqttuser/{mqttuser_id}", Tag: project, Summary: "An MQTT user of the project (beyond api.md)",
			Resp: mqttUserObject{}, Handle: s.getMQTTUser},
		{Method: "DELETE", Path: "/v2/project/{project_id}/mqttuser/{mqttuser_id}", Tag: project, Op: "delete",
			Summary: "Delete an MQTT user; its open sessions are closed at once (beyond api.md)",
			Doc:     mqttUserChangeDoc, Resp: envelopeOf[mqttUserObject]{}, Handle: s.deleteMQTTUser,
			Errors: map[int]string{403: "no grant of this endpoint or project, the MQTT user was created by someone else and the caller holds no company role, " +
				"or the caller lacks the user's rights by TagAuth; nothing is deleted"}},

		{Method: "GET", Path: "/v2/project/{project_id}/roles", Tag: project, Summary: "List the roles of a project",
			Resp: []store.ProjectRole{}, Handle: s.listProjectRoles},
		{Method: "POST", Path: "/v2/project/{project_id}/role", Tag: project, Op: "create", Summary: "Create a project role",
			Body: projectRoleRequest{}, Resp: envelopeOf[store.ProjectRole]{}, Handle: s.createProjectRole},
		{Method: "PUT", Path: "/v2/project/{project_id}/role/{role_id}", Tag: project, Op: "update", Summary: "Change a project role (lists are replaced)",
			Body: projectRoleUpdate{}, Resp: envelopeOf[store.ProjectRole]{}, Handle: s.updateProjectRole},
		{Method: "DELETE", Path: "/v2/project/{project_id}/role/{role_id}", Tag: project, Op: "delete", Summary: "Delete a project role and its assignments",
			Resp: envelopeOf[store.ProjectRole]{}, Handle: s.deleteProjectRole},
		{Method: "POST", Path: "/v2/project/{project_id}/role/{role_id}/user/{user_id}", Tag: project, Op: "create", Summary: "Assign a project role to a user",
			Resp: envelopeOf[projectAssignment]{}, Handle: s.assignProjectRole},
		{Method: "DELETE", Path: "/v2/project/{project_id}/role/{role_id}/user/{user_id}", Tag: project, Op: "delete", Summary: "Take a project role from a user",
			Resp: envelopeOf[projectAssignment]{}, Handle: s.unassignProjectRole},
	}, s.fileRoutes(), // the document store in both spaces: files.go
		s.viewRoutes()) // favorites and plot views: favorites.go, plotviews.go
}

// refusedUserFields are the fields of aedifion's user creation and
// update that bdp users do not have: per-user settings.
var refusedUserFields = []string{"units_system", "currency_system", "locale"}

// envelopeOf documents an envelope around a resource type.
type envelopeOf[T any] struct {
	Success   bool   `json:"success"`
	Operation string `json:"operation"`
	Resource  T      `json:"resource"`
}

func (s *Server) listEndpoints(c *fiber.Ctx, _ *call) (any, error) {
	out := make([]endpointEntry, 0, len(s.routes))
	for _, r := range s.routes {
		out = append(out, endpointEntry{Endpoint: store.Endpoint{ID: r.ID, Method: r.Method, Path: r.Path, Tag: r.Tag}, Summary: r.Summary})
	}
	return out, nil
}

func (s *Server) serveOpenAPI(c *fiber.Ctx, _ *call) (any, error) {
	return rawJSON(s.openapi), nil
}
