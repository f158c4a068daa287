-- Memories. The public id is unique per tenant only, so an id chosen in one
-- tenant reveals nothing about another. Identifiers use the "C" collation:
-- byte order, the same as SQLite, whatever the database locale.
CREATE TABLE memories (
    tenant            text COLLATE "C" NOT NULL,
    id                text COLLATE "C" NOT NULL,
    layer             text NOT NULL,
    scope_id          text COLLATE "C" NOT NULL,
    content           text NOT NULL,
    tags              text[] NOT NULL DEFAULT '{}',
    metadata          jsonb NOT NULL DEFAULT '{}',
    source_type       text NOT NULL,
    knowledge_item_id text COLLATE "C",
    content_hash      text NOT NULL DEFAULT '',
    orphaned          boolean NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    tsv               tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    PRIMARY KEY (tenant, id)
);

-- Newest-first listing within scopes (searches without terms).
CREATE INDEX memories_scope ON memories (tenant, layer, scope_id, created_at);

-- Pointers are keyed by their knowledge item.
CREATE UNIQUE INDEX memories_pointer ON memories (tenant, knowledge_item_id)
    WHERE knowledge_item_id IS NOT NULL;

CREATE INDEX memories_tsv ON memories USING gin (tsv);
CREATE INDEX memories_tags ON memories USING gin (tags);

CREATE TABLE sync_runs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant       text COLLATE "C" NOT NULL,
    started_at   timestamptz NOT NULL,
    duration_ms  bigint NOT NULL,
    added        integer NOT NULL,
    updated      integer NOT NULL,
    deleted      integer NOT NULL,
    unchanged    integer NOT NULL,
    failures     integer NOT NULL,
    failed_items jsonb NOT NULL DEFAULT '[]',
    forced       boolean NOT NULL
);

CREATE INDEX sync_runs_tenant ON sync_runs (tenant, started_at, id);

CREATE TABLE item_versions (
    tenant  text COLLATE "C" NOT NULL,
    item_id text COLLATE "C" NOT NULL,
    version integer NOT NULL,
    hash    text NOT NULL,
    change  text NOT NULL,
    author  text NOT NULL,
    message text NOT NULL,
    at      timestamptz NOT NULL,
    PRIMARY KEY (tenant, item_id, version)
);

CREATE TABLE audit_events (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at             timestamptz NOT NULL,
    tenant         text COLLATE "C" NOT NULL,
    tool           text NOT NULL,
    tool_version   text NOT NULL,
    subject        text NOT NULL,
    trace_id       text NOT NULL,
    correlation_id text NOT NULL,
    transport      text NOT NULL,
    decision       text NOT NULL,
    reason         text NOT NULL,
    code           text NOT NULL,
    latency_ms     double precision NOT NULL
);

-- Newest-first pages per tenant, optionally narrowed by tool or subject.
CREATE INDEX audit_events_tenant ON audit_events (tenant, at, id);
CREATE INDEX audit_events_tool ON audit_events (tenant, tool, at, id);
CREATE INDEX audit_events_subject ON audit_events (tenant, subject, at, id);

-- The audit log is append-only, for the application and for anyone with a
-- SQL shell alike.
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only';
END;
$$;

CREATE TRIGGER audit_events_no_change BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();

CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
