-- TRUNCATE clients clears the country blocks of migration 00098 too:
-- clients_count_trunc (migration 00060) deletes the list_blocks of kind
-- 'clients' only, which would leave 'clients:country:<XX>' blocks for rows
-- that are gone (Check reports them; a seek would count them).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION finsvc_country_blocks_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM list_blocks WHERE kind LIKE 'clients:country:%';
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER clients_country_blocks_trunc AFTER TRUNCATE ON clients
    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_country_blocks_truncate();

-- +goose Down
DROP TRIGGER clients_country_blocks_trunc ON clients;
DROP FUNCTION finsvc_country_blocks_truncate();
