-- +goose Up
-- The analytics catalog (api.md 2.14, decisions.md 8): components, their
-- pin placeholders and attribute definitions. The binary's catalog file is
-- upserted here at every start by alphanumeric id, so a numeric id, once
-- given, stays with its entry across restarts and releases (api.md 9.3).
-- Entries a later file drops stay: mappings may still point at them.
CREATE TABLE components (
    id              bigserial PRIMARY KEY,
    alphanumeric_id text NOT NULL UNIQUE CHECK (alphanumeric_id <> ''),
    name_de         text NOT NULL,
    name_en         text NOT NULL
);

CREATE TABLE component_pins (
    id              bigserial PRIMARY KEY,
    component_id    bigint NOT NULL REFERENCES components ON DELETE CASCADE,
    alphanumeric_id text NOT NULL CHECK (alphanumeric_id <> ''),
    name_de         text NOT NULL,
    name_en         text NOT NULL,
    location        text NOT NULL,
    unit            text NOT NULL,
    UNIQUE (component_id, alphanumeric_id)
);

CREATE TABLE component_pin_attributes (
    id          bigserial PRIMARY KEY,
    pin_id      bigint NOT NULL REFERENCES component_pins ON DELETE CASCADE,
    key         text NOT NULL,
    value       text NOT NULL,
    probability double precision NOT NULL CHECK (probability BETWEEN 0 AND 1),
    UNIQUE (pin_id, key)
);

CREATE TABLE component_attribute_definitions (
    id              bigserial PRIMARY KEY,
    component_id    bigint NOT NULL REFERENCES components ON DELETE CASCADE,
    alphanumeric_id text NOT NULL CHECK (alphanumeric_id <> ''),
    key             text NOT NULL,
    name_de         text NOT NULL,
    name_en         text NOT NULL,
    value_type      text NOT NULL CHECK (value_type IN ('float', 'string', 'json')),
    unit            text NOT NULL DEFAULT '',
    UNIQUE (component_id, alphanumeric_id),
    UNIQUE (component_id, key)
);

-- +goose Down
DROP TABLE component_attribute_definitions;
DROP TABLE component_pin_attributes;
DROP TABLE component_pins;
DROP TABLE components;
