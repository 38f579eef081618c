-- +goose Up
-- The document store (api.md 2.19, 4.9; decisions.md 2; issue 12). A
-- space is a company's or a project's files; the generated company_id /
-- project_id columns carry the foreign key of whichever owner the row has,
-- so deleting a company or project deletes its rows.
--
-- file_usage is the one row per space that reservations lock (SELECT ...
-- FOR UPDATE): it counts committed files plus pending reservations, so
-- concurrent uploads see each other and can never overrun a limit.
CREATE TABLE file_usage (
    space       text NOT NULL CHECK (space IN ('company', 'project')),
    owner_id    bigint NOT NULL,
    company_id  bigint GENERATED ALWAYS AS (CASE WHEN space = 'company' THEN owner_id END) STORED
                REFERENCES companies ON DELETE CASCADE,
    project_id  bigint GENERATED ALWAYS AS (CASE WHEN space = 'project' THEN owner_id END) STORED
                REFERENCES projects ON DELETE CASCADE,
    files       bigint NOT NULL DEFAULT 0 CHECK (files >= 0),
    space_bytes bigint NOT NULL DEFAULT 0 CHECK (space_bytes >= 0),
    PRIMARY KEY (space, owner_id)
);

CREATE TABLE files (
    space       text NOT NULL CHECK (space IN ('company', 'project')),
    owner_id    bigint NOT NULL,
    company_id  bigint GENERATED ALWAYS AS (CASE WHEN space = 'company' THEN owner_id END) STORED
                REFERENCES companies ON DELETE CASCADE,
    project_id  bigint GENERATED ALWAYS AS (CASE WHEN space = 'project' THEN owner_id END) STORED
                REFERENCES projects ON DELETE CASCADE,
    path        text NOT NULL CHECK (path <> '' AND octet_length(path) <= 1024),
    size_bytes  bigint NOT NULL CHECK (size_bytes >= 0),
    object_key  text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (space, owner_id, path)
);

-- An upload between its reservation and its commit or release. files and
-- bytes are what it added to file_usage; at most one pending upload per
-- path, so a replace's difference is measured against a file that cannot
-- change underneath it. created_at lets the start-up repair find
-- reservations of a crashed process.
CREATE TABLE file_reservations (
    id          bigserial PRIMARY KEY,
    space       text NOT NULL,
    owner_id    bigint NOT NULL,
    path        text NOT NULL,
    size_bytes  bigint NOT NULL CHECK (size_bytes >= 0),
    replace     boolean NOT NULL,
    files       bigint NOT NULL,
    bytes       bigint NOT NULL,
    object_key  text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (space, owner_id) REFERENCES file_usage ON DELETE CASCADE,
    UNIQUE (space, owner_id, path)
);

-- +goose Down
DROP TABLE file_reservations, files, file_usage;
