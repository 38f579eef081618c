-- +goose Up
-- Companies are strictly separated domains: every row below hangs off one.
CREATE TABLE companies (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    description text NOT NULL DEFAULT '',
    address     text NOT NULL DEFAULT '',
    phone       text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    company_id    bigint NOT NULL REFERENCES companies ON DELETE CASCADE,
    first_name    text NOT NULL,
    last_name     text NOT NULL,
    email         text NOT NULL,
    address       text NOT NULL DEFAULT '',
    phone         text NOT NULL DEFAULT '',
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
-- Emails are unique regardless of case: Ada@x and ada@x are one person.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));
CREATE INDEX users_company_idx ON users (company_id);

CREATE TABLE projects (
    id          bigserial PRIMARY KEY,
    company_id  bigint NOT NULL REFERENCES companies ON DELETE CASCADE,
    name        text NOT NULL,
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX projects_company_idx ON projects (company_id);

-- The endpoint catalog. Ids are handed out once per (method, path) and kept
-- forever, so role grants survive restarts and releases.
CREATE TABLE endpoints (
    id             serial PRIMARY KEY,
    request_method text NOT NULL,
    path           text NOT NULL,
    tag            text NOT NULL,
    UNIQUE (request_method, path)
);

-- authed_endpoints keeps what the client sent; 0 means all endpoints the
-- role may hold. Admin roles list every id and are extended when the
-- catalog grows.
CREATE TABLE company_roles (
    id               bigserial PRIMARY KEY,
    company_id       bigint NOT NULL REFERENCES companies ON DELETE CASCADE,
    name             text NOT NULL,
    description      text NOT NULL DEFAULT '',
    authed_endpoints integer[] NOT NULL DEFAULT '{}',
    is_admin         boolean NOT NULL DEFAULT false
);
CREATE INDEX company_roles_company_idx ON company_roles (company_id);

CREATE TABLE company_role_users (
    role_id bigint NOT NULL REFERENCES company_roles ON DELETE CASCADE,
    user_id bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    PRIMARY KEY (role_id, user_id)
);
CREATE INDEX company_role_users_user_idx ON company_role_users (user_id);

CREATE TABLE project_roles (
    id               bigserial PRIMARY KEY,
    project_id       bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    name             text NOT NULL,
    description      text NOT NULL DEFAULT '',
    authed_endpoints integer[] NOT NULL DEFAULT '{}',
    is_admin         boolean NOT NULL DEFAULT false
);
CREATE INDEX project_roles_project_idx ON project_roles (project_id);

CREATE TABLE project_role_tags (
    id      bigserial PRIMARY KEY,
    role_id bigint NOT NULL REFERENCES project_roles ON DELETE CASCADE,
    key     text NOT NULL,
    value   text NOT NULL,
    read    boolean NOT NULL,
    write   boolean NOT NULL
);
CREATE INDEX project_role_tags_role_idx ON project_role_tags (role_id);

CREATE TABLE project_role_users (
    role_id bigint NOT NULL REFERENCES project_roles ON DELETE CASCADE,
    user_id bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    PRIMARY KEY (role_id, user_id)
);
CREATE INDEX project_role_users_user_idx ON project_role_users (user_id);

-- Operator-controlled settings and quotas (decisions.md section 2).
CREATE TABLE project_settings (
    project_id               bigint PRIMARY KEY REFERENCES projects ON DELETE CASCADE,
    setpoint_writing_enabled boolean NOT NULL DEFAULT false,
    setpoint_max_priority    integer NOT NULL DEFAULT 8 CHECK (setpoint_max_priority BETWEEN 1 AND 16),
    autosampling_n           integer NOT NULL DEFAULT 200 CHECK (autosampling_n > 0),
    units_system             text NOT NULL DEFAULT 'SI',
    currency_system          text NOT NULL DEFAULT 'EUR'
);

CREATE TABLE company_quotas (
    company_id      bigint PRIMARY KEY REFERENCES companies ON DELETE CASCADE,
    files           bigint NOT NULL DEFAULT 1000 CHECK (files >= 0),
    space_bytes     bigint NOT NULL DEFAULT 1073741824 CHECK (space_bytes >= 0),
    file_size_bytes bigint NOT NULL DEFAULT 104857600 CHECK (file_size_bytes >= 0)
);

CREATE TABLE project_quotas (
    project_id      bigint PRIMARY KEY REFERENCES projects ON DELETE CASCADE,
    files           bigint NOT NULL DEFAULT 1000 CHECK (files >= 0),
    space_bytes     bigint NOT NULL DEFAULT 1073741824 CHECK (space_bytes >= 0),
    file_size_bytes bigint NOT NULL DEFAULT 104857600 CHECK (file_size_bytes >= 0)
);

-- Datapoints are created by their first observation (timeseries issue) or
-- by the operator setting their system tags.
CREATE TABLE datapoints (
    id                 bigserial PRIMARY KEY,
    project_id         bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    datapoint_id       text NOT NULL,
    hash_id            text NOT NULL UNIQUE,
    setpoint_min_value double precision,
    setpoint_max_value double precision,
    UNIQUE (project_id, datapoint_id)
);

CREATE TABLE datapoint_tags (
    id           bigserial PRIMARY KEY,
    datapoint_id bigint NOT NULL REFERENCES datapoints ON DELETE CASCADE,
    key          text NOT NULL,
    value        text NOT NULL,
    source       text NOT NULL,
    UNIQUE (datapoint_id, source, key)
);

-- Secrets the platform generates once and keeps (the token signing key).
CREATE TABLE platform_secrets (
    name  text PRIMARY KEY,
    value bytea NOT NULL
);

-- +goose Down
DROP TABLE platform_secrets, datapoint_tags, datapoints, project_quotas, company_quotas,
    project_settings, project_role_users, project_role_tags, project_roles,
    company_role_users, company_roles, endpoints, projects, users, companies;
