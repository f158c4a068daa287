-- The knowledge set version the replicas of one database share: a
-- replica that sees a newer version than the set it loaded reloads its
-- knowledge directory. One row, created by the first publish.
CREATE TABLE knowledge_version (
    id           boolean PRIMARY KEY DEFAULT true CHECK (id),
    version      bigint NOT NULL,
    digest       text NOT NULL,
    published_at timestamptz NOT NULL
);
