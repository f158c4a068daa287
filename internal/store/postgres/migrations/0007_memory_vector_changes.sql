-- The feed of memory vector changes: one row each time a memory's vector is
-- stored, replaced or removed (with its memory, or because its content
-- changed), or the memory moves to another layer or scope. Replicas sharing
-- this database read it to keep their in-process vector indexes in step
-- with each other's writes (store.VectorFeed). A reader takes the rows of
-- transactions older than every transaction still running (xid below the
-- snapshot's xmin), so a row committed late is never skipped.
CREATE TABLE memory_vector_changes (
    seq    bigserial PRIMARY KEY,
    xid    xid8 NOT NULL DEFAULT pg_current_xact_id(),
    at     timestamptz NOT NULL DEFAULT now(),
    tenant text COLLATE "C" NOT NULL,
    id     text COLLATE "C" NOT NULL
);

CREATE INDEX memory_vector_changes_xid ON memory_vector_changes (xid, seq);
CREATE INDEX memory_vector_changes_at ON memory_vector_changes (at);

CREATE FUNCTION memory_vector_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO memory_vector_changes (tenant, id) VALUES (OLD.tenant, OLD.id);
    ELSE
        INSERT INTO memory_vector_changes (tenant, id) VALUES (NEW.tenant, NEW.id);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER memory_vector_changed AFTER INSERT OR UPDATE OR DELETE ON memory_vectors
    FOR EACH ROW EXECUTE FUNCTION memory_vector_changed();

CREATE TRIGGER memory_scope_changed AFTER UPDATE OF layer, scope_id ON memories
    FOR EACH ROW WHEN (OLD.layer IS DISTINCT FROM NEW.layer OR OLD.scope_id IS DISTINCT FROM NEW.scope_id)
    EXECUTE FUNCTION memory_vector_changed();
