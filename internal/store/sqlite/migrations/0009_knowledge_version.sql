-- The knowledge set version the replicas of one database share: a
-- replica that sees a newer version than the set it loaded reloads its
-- knowledge directory. One row, created by the first publish.
CREATE TABLE knowledge_version (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    version      INTEGER NOT NULL,
    digest       TEXT NOT NULL,
    published_at INTEGER NOT NULL
);
