-- MCP tasks (the Tasks extension): kept in the store so that tasks/get and
-- tasks/cancel answer on every replica and after a restart. A working
-- task's replica renews lease_until; a task whose lease ran out (its
-- replica died) is marked failed, retryably, by any replica. Finished
-- tasks are deleted once their TTL from created_at has passed. Additive:
-- a build without it never reads the table.
-- min-reader: 8
CREATE TABLE mcp_tasks (
    id               text        NOT NULL PRIMARY KEY,
    owner            text        NOT NULL,
    replica          text        NOT NULL,
    status           text        NOT NULL,
    message          text        NOT NULL DEFAULT '',
    result           bytea,
    error            bytea,
    cancel_requested boolean     NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    lease_until      timestamptz NOT NULL
);
CREATE INDEX mcp_tasks_owner ON mcp_tasks (owner, created_at);
CREATE INDEX mcp_tasks_working ON mcp_tasks (lease_until) WHERE status = 'working';
CREATE INDEX mcp_tasks_replica ON mcp_tasks (replica) WHERE status = 'working';
