-- Memory embeddings: at most one per memory, recording the model that made
-- it (a vector of another model counts as missing and is re-made). The
-- vector is little-endian float32s. It goes with its memory (cascade) and
-- with the content it was made from (trigger).
CREATE TABLE memory_vectors (
    memory_seq INTEGER PRIMARY KEY REFERENCES memories (seq) ON DELETE CASCADE,
    model      TEXT    NOT NULL,
    vec        BLOB    NOT NULL
);

-- Progress counts and index rebuilds read the vectors of one model.
CREATE INDEX memory_vectors_model ON memory_vectors (model, memory_seq);

CREATE TRIGGER memory_vectors_stale AFTER UPDATE OF content ON memories
    WHEN old.content IS NOT new.content BEGIN
    DELETE FROM memory_vectors WHERE memory_seq = new.seq;
END;
