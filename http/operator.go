package http

import (
	"context"
	"crypto/subtle"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/cluster"
	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/units"
)

// operatorRoutes is the operator API of decisions.md 2: outside /v2, for
// the people who run the platform, behind BDP_OPERATOR_TOKEN.
func operatorRoutes(s *Server) []*route {
	const tag = tagOperator
	return []*route{
		{Method: "POST", Path: "/operator/companies", Tag: tag, Op: "create", Status: fiber.StatusCreated,
			Summary: "Create a company with its first user and company admin role",
			Body:    createCompanyRequest{}, Resp: envelopeOf[companyCreated]{}, Handle: s.createCompany},
		{Method: "GET", Path: "/operator/projects/{project_id}/settings", Tag: tag, Summary: "Settings of a project",
			Resp: envelopeOf[store.ProjectSettings]{}, Handle: s.getSettings},
		{Method: "PUT", Path: "/operator/projects/{project_id}/settings", Tag: tag, Op: "update", Summary: "Change settings of a project",
			Body: settingsRequest{}, Resp: envelopeOf[store.ProjectSettings]{}, Handle: s.putSettings},
		{Method: "PUT", Path: "/operator/companies/{company_id}/quota", Tag: tag, Op: "update", Summary: "Set the file store quota of a company",
			Body: quotaRequest{}, Resp: envelopeOf[store.Quota]{}, Handle: s.putCompanyQuota},
		{Method: "PUT", Path: "/operator/projects/{project_id}/quota", Tag: tag, Op: "update", Summary: "Set the file store quota of a project",
			Body: quotaRequest{}, Resp: envelopeOf[store.Quota]{}, Handle: s.putProjectQuota},
		{Method: "PUT", Path: "/operator/projects/{project_id}/datapoints/{dataPointID}/tags", Tag: tag, Op: "update",
			Summary: "Set system tags of a datapoint (created if missing); key units holds the raw unit",
			Body:    []tagRequest{}, Resp: envelopeOf[datapointTags]{}, Handle: s.putSystemTags},
		{Method: "POST", Path: "/operator/projects/{project_id}/edge", Tag: tag, Op: "create", Status: fiber.StatusCreated,
			Summary: "MQTT credentials for the project's edge device (username edge-{project_id}, topics below edge/{project_id}/, no expiry); " +
				"calling again gives a new password and closes the session that used the old one",
			Resp: envelopeOf[edgeCredentials]{}, Handle: s.putEdgeCredentials, Errors: map[int]string{503: mqttChange503}},
		{Method: "GET", Path: "/operator/cluster", Tag: tag, Summary: "The platform's nodes: in cluster mode every member registered in etcd, " +
			"what each holds (virtual datapoints, controls apps, edge connections) and what its reconciler moved; on one node, that node",
			Resp: envelopeOf[cluster.Status]{}, Handle: s.getCluster},
		{Method: "GET", Path: "/operator/currency-rates", Tag: tag, Summary: "Exchange rates: currency code to the value of one unit in a base currency of the operator's choice (EUR in the defaults); conversions use ratios only",
			Resp: envelopeOf[map[string]float64]{}, Handle: s.getCurrencyRates},
		{Method: "PUT", Path: "/operator/currency-rates", Tag: tag, Op: "update", Summary: "Set exchange rates (those named; others stay), e.g. {\"USD\": 0.86}: 1 USD = 0.86 of the base currency",
			Body: currencyRatesBody{}, Resp: envelopeOf[map[string]float64]{}, Handle: s.putCurrencyRates},
	}
}

// tagOperator marks the operator routes: wrap checks the operator token
// for them instead of a user's credentials.
const tagOperator = "operator"

// checkOperator checks the operator token, in constant time.
func (s *Server) checkOperator(c *fiber.Ctx) error {
	if s.cfg.OperatorToken == "" {
		return fault.Forbiddenf("the operator API is disabled; set BDP_OPERATOR_TOKEN to enable it")
	}
	scheme, tok, _ := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
	if !strings.EqualFold(scheme, "Bearer") ||
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.cfg.OperatorToken)) != 1 {
		return fault.Unauthenticatedf("operator token required")
	}
	return nil
}

type adminRequest struct {
	FirstName *string `json:"firstName" required:"true" maxLength:"200"`
	LastName  *string `json:"lastName" required:"true" maxLength:"200"`
	Email     *string `json:"email" required:"true" maxLength:"254"`
	Password  *string `json:"password" required:"true" maxLength:"1024"`
}

type createCompanyRequest struct {
	Name        *string       `json:"name" required:"true" maxLength:"200"`
	Description *string       `json:"description" maxLength:"2000"`
	Admin       *adminRequest `json:"admin" required:"true"`
}

type companyCreated struct {
	Company store.Company     `json:"company"`
	User    store.UserSummary `json:"user"`
	Role    store.CompanyRole `json:"role"`
}

func (s *Server) createCompany(c *fiber.Ctx, _ *call) (any, error) {
	var req createCompanyRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	a := req.Admin
	if err := checkRequired(a); err != nil {
		return nil, fault.Invalidf("admin: %s", fault.Message(err))
	}
	name, desc := text(req.Name), text(req.Description)
	admin, err := s.newUser(c, 0, *a.FirstName, *a.LastName, *a.Email, *a.Password)
	if err != nil {
		return nil, err
	}
	co, u, role, err := s.store.CreateCompany(c.UserContext(), store.Company{Name: *name, Description: str(desc)},
		admin, s.catalog.AllIDs())
	if err != nil {
		return nil, err
	}
	return ok("create", companyCreated{Company: co, User: u.Summary(), Role: role}), nil
}

func (s *Server) getSettings(c *fiber.Ctx, _ *call) (any, error) {
	id, err := pathID(c, "project_id")
	if err != nil {
		return nil, err
	}
	ps, err := s.store.ProjectSettings(c.UserContext(), id)
	if err != nil {
		return nil, err
	}
	return ok("", ps), nil
}

type settingsRequest struct {
	SetpointWritingEnabled *bool   `json:"setpoint_writing_enabled"`
	SetpointMaxPriority    *int    `json:"setpoint_max_priority" doc:"1 (most urgent) to 16; default 8"`
	AutosamplingN          *int    `json:"autosampling_n" doc:"default 200"`
	UnitsSystem            *string `json:"units_system" maxLength:"100"`
	CurrencySystem         *string `json:"currency_system" maxLength:"100"`
}

func (s *Server) putSettings(c *fiber.Ctx, _ *call) (any, error) {
	id, err := pathID(c, "project_id")
	if err != nil {
		return nil, err
	}
	var req settingsRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	ps, err := UpdateProjectSettings(c.UserContext(), s.store, id, store.SettingsPatch{
		SetpointWritingEnabled: req.SetpointWritingEnabled, SetpointMaxPriority: req.SetpointMaxPriority,
		AutosamplingN: req.AutosamplingN, UnitsSystem: req.UnitsSystem, CurrencySystem: req.CurrencySystem})
	if err != nil {
		return nil, err
	}
	return ok("update", ps), nil
}

// UpdateProjectSettings checks and makes a change of a project's settings
// (nil keeps one), for PUT /operator/projects/{project_id}/settings and
// `bdp admin project-settings`: a priority 1 to 16, autosampling_n 1 to
// 100000, known units and currency systems (their ids as listed). Every
// refusal is fault.Invalid naming the field; fault.NotFound for an
// unknown project.
func UpdateProjectSettings(ctx context.Context, st *store.Store, projectID int64, p store.SettingsPatch) (store.ProjectSettings, error) {
	if v := p.SetpointMaxPriority; v != nil && (*v < 1 || *v > 16) {
		return store.ProjectSettings{}, fault.Invalidf("field setpoint_max_priority: must be between 1 and 16, got %d", *v)
	}
	if n := p.AutosamplingN; n != nil && (*n < 1 || *n > 100_000) {
		return store.ProjectSettings{}, fault.Invalidf("field autosampling_n: must be between 1 and 100000, got %d", *n)
	}
	systems := units.Systems()
	for _, f := range []struct {
		field string
		value *string
		known []units.System
	}{{"units_system", p.UnitsSystem, systems.UnitsSystems}, {"currency_system", p.CurrencySystem, systems.CurrencySystems}} {
		if f.value == nil {
			continue
		}
		id, ok := knownSystem(f.known, *f.value)
		if !ok {
			return store.ProjectSettings{}, fault.Invalidf("field %s: %q is not one of %s (GET /v2/labels/systems)", f.field, *f.value, systemIDs(f.known))
		}
		*f.value = id
	}
	return st.UpdateProjectSettings(ctx, projectID, p)
}

type quotaRequest struct {
	Files         *int64 `json:"files"`
	SpaceBytes    *int64 `json:"space_bytes"`
	FileSizeBytes *int64 `json:"file_size_bytes"`
}

func (s *Server) quotaPatch(c *fiber.Ctx) (store.QuotaPatch, error) {
	var req quotaRequest
	if err := decode(c, &req); err != nil {
		return store.QuotaPatch{}, err
	}
	for field, v := range map[string]*int64{"files": req.Files, "space_bytes": req.SpaceBytes, "file_size_bytes": req.FileSizeBytes} {
		if v != nil && *v < 0 {
			return store.QuotaPatch{}, fault.Invalidf("field %s: must not be negative", field)
		}
	}
	return store.QuotaPatch{Files: req.Files, SpaceBytes: req.SpaceBytes, FileSizeBytes: req.FileSizeBytes}, nil
}

func (s *Server) putCompanyQuota(c *fiber.Ctx, _ *call) (any, error) {
	id, err := pathID(c, "company_id")
	if err != nil {
		return nil, err
	}
	p, err := s.quotaPatch(c)
	if err != nil {
		return nil, err
	}
	q, err := s.store.UpdateCompanyQuota(c.UserContext(), id, p)
	if err != nil {
		return nil, err
	}
	return ok("update", q), nil
}

func (s *Server) putProjectQuota(c *fiber.Ctx, _ *call) (any, error) {
	id, err := pathID(c, "project_id")
	if err != nil {
		return nil, err
	}
	p, err := s.quotaPatch(c)
	if err != nil {
		return nil, err
	}
	q, err := s.store.UpdateProjectQuota(c.UserContext(), id, p)
	if err != nil {
		return nil, err
	}
	return ok("update", q), nil
}

type tagRequest struct {
	Key   *string `json:"key" required:"true" maxLength:"200"`
	Value *string `json:"value" required:"true" maxLength:"2000"`
}

type datapointTags struct {
	DataPointID string               `json:"dataPointID"`
	Tags        []store.DatapointTag `json:"tags"`
}

func (s *Server) putSystemTags(c *fiber.Ctx, _ *call) (any, error) {
	id, err := pathID(c, "project_id")
	if err != nil {
		return nil, err
	}
	raw, err := url.PathUnescape(c.Params("dataPointID"))
	if err != nil {
		return nil, fault.Invalidf("dataPointID: bad percent-encoding")
	}
	dp, err := validDataPointID(raw)
	if err != nil {
		return nil, err
	}
	var req []tagRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	tags := make([]store.DatapointTag, 0, len(req))
	for i, t := range req {
		if err := checkRequired(&t); err != nil {
			return nil, fault.Invalidf("tags[%d]: %s", i, fault.Message(err))
		}
		tags = append(tags, store.DatapointTag{Key: strings.TrimSpace(*t.Key), Value: *t.Value, Source: "system"})
	}
	if _, err := s.store.Project(c.UserContext(), id); err != nil {
		return nil, err
	}
	out, err := s.store.SetSystemTags(c.UserContext(), id, dp, tags)
	if err != nil {
		return nil, err
	}
	return ok("update", datapointTags{DataPointID: dp, Tags: out}), nil
}

// validDataPointID enforces decisions.md 4 (codec.ValidateDataPointID).
func validDataPointID(raw string) (string, error) {
	if err := codec.ValidateDataPointID(raw); err != nil {
		return "", fault.Invalidf("%s", err.Error())
	}
	return raw, nil
}

// knownSystem finds a units or currency system by id, ignoring case and
// surrounding space, and returns its id as listed.
func knownSystem(list []units.System, id string) (string, bool) {
	for _, s := range list {
		if strings.EqualFold(strings.TrimSpace(id), s.ID) {
			return s.ID, true
		}
	}
	return "", false
}

func systemIDs(list []units.System) string {
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	return strings.Join(ids, ", ")
}

// getCluster answers what the platform's nodes hold.
func (s *Server) getCluster(c *fiber.Ctx, _ *call) (any, error) {
	view, err := s.cluster.View(c.UserContext())
	if err != nil {
		return nil, err
	}
	return ok("", view), nil
}
