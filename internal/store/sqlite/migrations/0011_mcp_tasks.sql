-- MCP tasks (the Tasks extension): kept in the store so that tasks/get and
-- tasks/cancel answer after a restart. A working task's replica renews
-- lease_until; a task whose lease ran out (its process died) is marked
-- failed, retryably. Finished tasks are deleted once their TTL from
-- created_at has passed. Times are unix microseconds. Additive: a build
-- without it never reads the table.
-- min-reader: 10
CREATE TABLE mcp_tasks (
    id               TEXT    NOT NULL PRIMARY KEY,
    owner            TEXT    NOT NULL,
    replica          TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    message          TEXT    NOT NULL DEFAULT '',
    result           BLOB,
    error            BLOB,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    lease_until      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX mcp_tasks_owner ON mcp_tasks (owner, created_at);
CREATE INDEX mcp_tasks_working ON mcp_tasks (lease_until) WHERE status = 'working';
