-- Memory embeddings: at most one per memory, recording the model that made
-- it (a vector of another model counts as missing and is re-made). The
-- vector is little-endian float32s. It goes with its memory (cascade) and
-- with the content it was made from (trigger).
CREATE TABLE memory_vectors (
    tenant text COLLATE "C" NOT NULL,
    id     text COLLATE "C" NOT NULL,
    model  text NOT NULL,
    vec    bytea NOT NULL,
    PRIMARY KEY (tenant, id),
    FOREIGN KEY (tenant, id) REFERENCES memories (tenant, id) ON DELETE CASCADE
);

-- Progress counts and index rebuilds read the vectors of one model.
CREATE INDEX memory_vectors_model ON memory_vectors (model);

CREATE FUNCTION memory_vectors_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_vectors WHERE tenant = NEW.tenant AND id = NEW.id;
    RETURN NEW;
END;
$$;

CREATE TRIGGER memory_vectors_stale AFTER UPDATE OF content ON memories
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
    EXECUTE FUNCTION memory_vectors_stale();
