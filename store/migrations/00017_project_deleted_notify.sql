-- +goose Up
-- A deleted project tells every server on the database through the
-- channel bdp_credentials (store.ListenCredentialsChanged), as changes to
-- users and roles do (00006): each drops what it cached of the project
-- (the callers' access to it, its datapoints' ids), so that another node
-- answers 404 for it at once rather than write under ids that are gone.
-- Payload 'project:' and the id; deleting a company deletes its projects,
-- and each tells.

-- +goose StatementBegin
CREATE FUNCTION bdp_notify_project_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('bdp_credentials', 'project:' || OLD.id::text);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER projects_deleted_notify AFTER DELETE ON projects
    FOR EACH ROW EXECUTE FUNCTION bdp_notify_project_deleted();

-- +goose Down
DROP TRIGGER projects_deleted_notify ON projects;
DROP FUNCTION bdp_notify_project_deleted();
