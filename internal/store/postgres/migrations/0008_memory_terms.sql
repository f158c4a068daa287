-- Scoped terms: every lexeme of a memory's tsv, with its memory's scope and
-- age, in a B-tree that lists each (scope, lexeme) newest first. A search of
-- OR-ed words merges, newest first, the lists of its words in each of the
-- caller's scopes and stops when the window is full, where the GIN index
-- fetches every match of the tenant in every scope to sort them by age
-- (docs/BENCHMARKS.md). The join back to memories checks tenant, scope and
-- the text query exactly, as before.
--
-- Scopes are numbered here so that a term row holds a bigint instead of
-- the tenant, layer and scope id. A number is never reused for another
-- scope; a scope's row stays when its last memory goes.
CREATE TABLE memory_scopes (
    key      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant   text COLLATE "C" NOT NULL,
    layer    text NOT NULL,
    scope_id text COLLATE "C" NOT NULL,
    UNIQUE (tenant, layer, scope_id)
);

CREATE TABLE memory_terms (
    scope      bigint NOT NULL,
    lexeme     text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL,
    id         text COLLATE "C" NOT NULL
);

INSERT INTO memory_scopes (tenant, layer, scope_id)
    SELECT DISTINCT tenant, layer, scope_id FROM memories ORDER BY 1, 2, 3;

INSERT INTO memory_terms (scope, lexeme, created_at, id)
    SELECT s.key, l.lexeme, m.created_at, m.id
    FROM memories m
    JOIN memory_scopes s ON s.tenant = m.tenant AND s.layer = m.layer AND s.scope_id = m.scope_id
    CROSS JOIN unnest(tsvector_to_array(m.tsv)) AS l(lexeme);

-- Built after the rows: one sort instead of a million inserts into a tree.
ALTER TABLE memory_terms ADD PRIMARY KEY (scope, lexeme, created_at, id);

-- memory_scope_key numbers the scope (tenant, layer, scope_id), adding it
-- when new. A concurrent insert of the same scope waits on the unique key,
-- then finds the other's row.
CREATE FUNCTION memory_scope_key(t text, l text, s text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    k bigint;
BEGIN
    SELECT key INTO k FROM memory_scopes WHERE tenant = t AND layer = l AND scope_id = s;
    IF FOUND THEN
        RETURN k;
    END IF;
    INSERT INTO memory_scopes (tenant, layer, scope_id) VALUES (t, l, s)
        ON CONFLICT DO NOTHING RETURNING key INTO k;
    IF k IS NULL THEN
        SELECT key INTO k FROM memory_scopes WHERE tenant = t AND layer = l AND scope_id = s;
    END IF;
    RETURN k;
END;
$$;

CREATE FUNCTION memory_terms_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k bigint;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        SELECT key INTO k FROM memory_scopes
        WHERE tenant = OLD.tenant AND layer = OLD.layer AND scope_id = OLD.scope_id;
        DELETE FROM memory_terms
        WHERE scope = k AND lexeme = ANY (tsvector_to_array(OLD.tsv))
          AND created_at = OLD.created_at AND id = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        k := memory_scope_key(NEW.tenant, NEW.layer, NEW.scope_id);
        INSERT INTO memory_terms (scope, lexeme, created_at, id)
            SELECT k, l, NEW.created_at, NEW.id FROM unnest(tsvector_to_array(NEW.tsv)) AS l;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER memory_terms_insert AFTER INSERT ON memories
    FOR EACH ROW EXECUTE FUNCTION memory_terms_changed();

CREATE TRIGGER memory_terms_delete AFTER DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION memory_terms_changed();

-- Orphaning, tags and metadata do not touch the terms.
CREATE TRIGGER memory_terms_update AFTER UPDATE ON memories
    FOR EACH ROW WHEN (OLD.tsv IS DISTINCT FROM NEW.tsv
        OR OLD.tenant IS DISTINCT FROM NEW.tenant OR OLD.id IS DISTINCT FROM NEW.id
        OR OLD.layer IS DISTINCT FROM NEW.layer OR OLD.scope_id IS DISTINCT FROM NEW.scope_id
        OR OLD.created_at IS DISTINCT FROM NEW.created_at)
    EXECUTE FUNCTION memory_terms_changed();
