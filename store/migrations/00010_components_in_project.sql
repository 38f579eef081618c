-- +goose Up
-- Components mapped into a project (api.md 2.15, decisions.md 8): an
-- abstract component of the catalog given a name, its pins mapped onto the
-- project's datapoints and its attributes filled in. A datapoint may be
-- mapped onto pins of several components; a deleted datapoint leaves its
-- pins unmapped.
CREATE TABLE components_in_project (
    id           bigserial PRIMARY KEY,
    project_id   bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    component_id bigint NOT NULL REFERENCES components,
    name_en      text NOT NULL DEFAULT '',
    name_de      text NOT NULL DEFAULT '',
    display_name text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX components_in_project_project ON components_in_project (project_id, id);

CREATE TABLE component_pin_mappings (
    componentinproject_id bigint NOT NULL REFERENCES components_in_project ON DELETE CASCADE,
    pin_id                bigint NOT NULL REFERENCES component_pins,
    datapoint_id          bigint NOT NULL REFERENCES datapoints ON DELETE CASCADE,
    PRIMARY KEY (componentinproject_id, pin_id)
);
CREATE INDEX component_pin_mappings_datapoint ON component_pin_mappings (datapoint_id);

CREATE TABLE component_attribute_values (
    componentinproject_id   bigint NOT NULL REFERENCES components_in_project ON DELETE CASCADE,
    attribute_definition_id bigint NOT NULL REFERENCES component_attribute_definitions,
    value                   text NOT NULL,
    PRIMARY KEY (componentinproject_id, attribute_definition_id)
);

-- +goose Down
DROP TABLE component_attribute_values;
DROP TABLE component_pin_mappings;
DROP TABLE components_in_project;
