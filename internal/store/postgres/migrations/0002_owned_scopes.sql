-- Session and agent ids are names a client chooses (the x-session-id and
-- x-agent-id headers, MCP's clientInfo), not secrets: any principal of a
-- tenant could name another's session and read its memories. From this
-- version the tools store such a memory's scope as its owner (the user the
-- principal acts for, else its subject), a unit separator (chr(31)) and
-- the session or agent id (internal/tools/internal/scope). Rows written
-- before carry no owner and none can be recovered, so they are given an
-- empty one: kept, but matching no caller, rather than readable by every
-- principal that guesses the name.
UPDATE memories SET scope_id = chr(31) || scope_id
    WHERE layer IN ('session', 'agent') AND strpos(scope_id, chr(31)) = 0;
