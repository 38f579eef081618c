-- +goose Up
-- Every server caches verified passwords and each user's roles. A change to
-- what those caches hold tells every server on the database through the
-- channel bdp_credentials (store.ListenCredentialsChanged), from a trigger,
-- so that the notice is part of the changing transaction: PostgreSQL
-- delivers it at commit, never for a rolled-back change, and a committed
-- change cannot go untold because its process died right after commit.
-- Triggers also cover every writer: this server, another one, bdp admin.
-- Payload: the id of a changed or deleted user, or 'roles' when roles or
-- role assignments changed (cached passwords stay valid then).

-- +goose StatementBegin
CREATE FUNCTION bdp_notify_user_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('bdp_credentials', OLD.id::text);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION bdp_notify_roles_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('bdp_credentials', 'roles');
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER users_changed_notify AFTER UPDATE ON users
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION bdp_notify_user_changed();
CREATE TRIGGER users_deleted_notify AFTER DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION bdp_notify_user_changed();
CREATE TRIGGER company_roles_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON company_roles
    FOR EACH STATEMENT EXECUTE FUNCTION bdp_notify_roles_changed();
CREATE TRIGGER company_role_users_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON company_role_users
    FOR EACH STATEMENT EXECUTE FUNCTION bdp_notify_roles_changed();
CREATE TRIGGER project_roles_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON project_roles
    FOR EACH STATEMENT EXECUTE FUNCTION bdp_notify_roles_changed();
CREATE TRIGGER project_role_tags_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON project_role_tags
    FOR EACH STATEMENT EXECUTE FUNCTION bdp_notify_roles_changed();
CREATE TRIGGER project_role_users_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON project_role_users
    FOR EACH STATEMENT EXECUTE FUNCTION bdp_notify_roles_changed();

-- +goose Down
DROP TRIGGER project_role_users_notify ON project_role_users;
DROP TRIGGER project_role_tags_notify ON project_role_tags;
DROP TRIGGER project_roles_notify ON project_roles;
DROP TRIGGER company_role_users_notify ON company_role_users;
DROP TRIGGER company_roles_notify ON company_roles;
DROP TRIGGER users_deleted_notify ON users;
DROP TRIGGER users_changed_notify ON users;
DROP FUNCTION bdp_notify_roles_changed();
DROP FUNCTION bdp_notify_user_changed();
