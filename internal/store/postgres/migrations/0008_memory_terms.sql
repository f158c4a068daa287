-- Scoped terms: every lexeme of a memory's tsv, with its memory's scope,
-- age, orphan state, the lexeme's frequency in the memory (its positions)
-- and the memory's length (all positions), in a B-tree that lists each
-- (scope, lexeme) newest first. A search of OR-ed words merges, newest
-- first, the lists of its words in each of the caller's scopes, stops when
-- the window is full and ranks the window from these rows alone; only the
-- memories shown are read. The GIN index fetched every match of the tenant
-- in every scope to sort them by age, then read each to rank it
-- (docs/BENCHMARKS.md).
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
    id         text COLLATE "C" NOT NULL,
    tf         integer NOT NULL,
    len        integer NOT NULL,
    orphaned   boolean NOT NULL
);

-- memory_term_rows are the rows of memory_terms for a memory's tsv:
-- (lexeme, tf, len).
CREATE FUNCTION memory_term_rows(tsv tsvector) RETURNS TABLE (lexeme text, tf integer, len integer)
LANGUAGE sql IMMUTABLE AS $$
    SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1),
        (sum(coalesce(array_length(u.positions, 1), 1)) OVER ())::integer
    FROM unnest(tsv) AS u
$$;

INSERT INTO memory_scopes (tenant, layer, scope_id)
    SELECT DISTINCT tenant, layer, scope_id FROM memories ORDER BY 1, 2, 3;

INSERT INTO memory_terms (scope, lexeme, created_at, id, tf, len, orphaned)
    SELECT s.key, r.lexeme, m.created_at, m.id, r.tf, r.len, m.orphaned
    FROM memories m
    JOIN memory_scopes s ON s.tenant = m.tenant AND s.layer = m.layer AND s.scope_id = m.scope_id
    CROSS JOIN memory_term_rows(m.tsv) AS r;

-- Built after the rows: one sort instead of a million inserts into a tree.
-- The included columns let a search rank from the index alone.
ALTER TABLE memory_terms ADD PRIMARY KEY (scope, lexeme, created_at, id) INCLUDE (tf, len, orphaned);

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
        INSERT INTO memory_terms (scope, lexeme, created_at, id, tf, len, orphaned)
            SELECT k, r.lexeme, NEW.created_at, NEW.id, r.tf, r.len, NEW.orphaned FROM memory_term_rows(NEW.tsv) AS r;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER memory_terms_insert AFTER INSERT ON memories
    FOR EACH ROW EXECUTE FUNCTION memory_terms_changed();

CREATE TRIGGER memory_terms_delete AFTER DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION memory_terms_changed();

-- Tags and metadata do not touch the terms.
CREATE TRIGGER memory_terms_update AFTER UPDATE ON memories
    FOR EACH ROW WHEN (OLD.tsv IS DISTINCT FROM NEW.tsv
        OR OLD.tenant IS DISTINCT FROM NEW.tenant OR OLD.id IS DISTINCT FROM NEW.id
        OR OLD.layer IS DISTINCT FROM NEW.layer OR OLD.scope_id IS DISTINCT FROM NEW.scope_id
        OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.orphaned IS DISTINCT FROM NEW.orphaned)
    EXECUTE FUNCTION memory_terms_changed();
