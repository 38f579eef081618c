package store

// The records below are what the API shows; their JSON names follow
// the API contract (api.md section 2).

// Company is a tenant: a strictly separated domain.
type Company struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Address     string `json:"address"`
	Phone       string `json:"phone"`
}

// User is a person of one company. The password hash never leaves the
// store layer in JSON.
type User struct {
	ID           int64  `json:"id"`
	CompanyID    int64  `json:"company_id"`
	FirstName    string `json:"firstName"`
	LastName     string `json:"lastName"`
	Email        string `json:"email"`
	Address      string `json:"address"`
	Phone        string `json:"phone"`
	PasswordHash string `json:"-"`
}

// UserSummary is a user as the company listing shows it.
type UserSummary struct {
	ID        int64  `json:"id"`
	CompanyID int64  `json:"company_id"`
	FirstName string `json:"firstName"`
	LastName  string `json:"lastName"`
	Email     string `json:"email"`
}

// Summary drops the profile fields.
func (u User) Summary() UserSummary {
	return UserSummary{ID: u.ID, CompanyID: u.CompanyID, FirstName: u.FirstName, LastName: u.LastName, Email: u.Email}
}

// Project belongs to exactly one company.
type Project struct {
	ID          int64  `json:"id"`
	CompanyID   int64  `json:"company_id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// TagAuth limits a project role to the datapoints whose tag Key matches
// Value (with * as wildcard).
type TagAuth struct {
	ID    int64  `json:"id"`
	Key   string `json:"key"`
	Value string `json:"value"`
	Read  bool   `json:"read"`
	Write bool   `json:"write"`
}

// ProjectRole grants endpoints within one project, limited by TagAuths.
type ProjectRole struct {
	ID              int64     `json:"id"`
	Name            string    `json:"name"`
	Description     string    `json:"description"`
	ProjectID       int64     `json:"project_id"`
	AuthedEndpoints []int32   `json:"authed_endpoints"`
	AuthedTags      []TagAuth `json:"authed_tags"`
	IsAdmin         bool      `json:"-"`
}

// CompanyRole grants endpoints in every project of a company.
type CompanyRole struct {
	ID              int64   `json:"id"`
	Name            string  `json:"name"`
	Description     string  `json:"description"`
	CompanyID       int64   `json:"company_id"`
	AuthedEndpoints []int32 `json:"authed_endpoints"`
	IsAdmin         bool    `json:"-"`
}

// Endpoint is one catalog entry: a route with its stable id.
type Endpoint struct {
	ID     int32  `json:"id"`
	Method string `json:"request_method"`
	Path   string `json:"path"`
	Tag    string `json:"tag"`
}

// ProjectSettings are the operator-controlled knobs of a project.
type ProjectSettings struct {
	SetpointWritingEnabled bool   `json:"setpoint_writing_enabled"`
	SetpointMaxPriority    int    `json:"setpoint_max_priority"`
	AutosamplingN          int    `json:"autosampling_n"`
	UnitsSystem            string `json:"units_system"`
	CurrencySystem         string `json:"currency_system"`
}

// Quota limits the file store of a company or project.
type Quota struct {
	Files         int64 `json:"files"`
	SpaceBytes    int64 `json:"space_bytes"`
	FileSizeBytes int64 `json:"file_size_bytes"`
}

// DatapointTag is one tag of a datapoint.
type DatapointTag struct {
	ID     int64  `json:"id"`
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Principal is everything authorization needs to know about a user: the
// user and every role they hold.
type Principal struct {
	User         User
	CompanyRoles []CompanyRole
	ProjectRoles []ProjectRole
}
