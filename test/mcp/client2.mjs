// client2.mjs drives toolsvc with the official MCP TypeScript SDK v2 client
// (@modelcontextprotocol/client), in one of its two modes:
//
//   --era modern   pinned to revision 2026-07-28 (versionNegotiation
//                  { mode: { pin } }): server/discover, then every request
//                  stateless with its _meta; no fallback to initialize.
//   --era default  the client's default: the 2025 initialize handshake.
//
// It checks the negotiated era and revision, lets the client list every
// page of tools (its aggregate feeds its own outputSchema validation;
// EXPECT_TOOLS is the count it must find), calls each tool with its first example (sync-knowledge
// first, so the knowledge tools find their items), proves that the
// client's validation is on by handing it an outputSchema the result
// cannot meet, and reads a knowledge resource. Pinned, it also starts
// sync-knowledge as a task (the Tasks extension) and, over HTTP, runs one
// to its result and cancels another (see the Tasks part below).
//
//   node client2.mjs --era modern http://127.0.0.1:8080/mcp
//   node client2.mjs --era default --stdio /path/to/toolsvc mcp --db ... --knowledge-dir ...
//
// It prints one line per check ("ok   ..." or "FAIL ...") and exits non-zero
// on any failure. Node 22 or later (the client's engines).
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import Ajv2020 from "ajv/dist/2020.js";

const MODERN = "2026-07-28";
const args = process.argv.slice(2);
if (args[0] !== "--era" || !["modern", "default"].includes(args[1])) {
  console.error("usage: client2.mjs --era modern|default (URL | --stdio COMMAND ARGS...)");
  process.exit(2);
}
const modern = args[1] === "modern";
const target = args.slice(2);
const stdio = target[0] === "--stdio";

const newTransport = () => {
  if (stdio) return new StdioClientTransport({ command: target[1], args: target.slice(2), stderr: "inherit" });
  const headers = process.env.MCP_TOKEN ? { Authorization: `Bearer ${process.env.MCP_TOKEN}` } : {};
  return new StreamableHTTPClientTransport(new URL(target[0]), { requestInit: { headers } });
};

let failures = 0;
let passed = 0;
const fail = (msg) => {
  failures++;
  console.log(`FAIL ${msg}`);
};
const ok = (msg) => {
  passed++;
  console.log(`ok   ${msg}`);
};

const options = modern ? { versionNegotiation: { mode: { pin: MODERN } } } : {};
const client = new Client({ name: "toolsvc-ts2-e2e", version: "2.0.0" }, options);
await client.connect(newTransport());

// The era: pinned modern must be modern at exactly 2026-07-28 (no
// fallback); the default must stay on the 2025 handshake.
const era = client.getProtocolEra();
const version = client.getNegotiatedProtocolVersion();
if (modern) {
  if (era !== "modern" || version !== MODERN) fail(`era ${era} ${version}, want modern ${MODERN}`);
  else ok(`connected in the modern era at ${version}`);
  const discover = client.getDiscoverResult();
  if (!discover?.supportedVersions?.includes(MODERN)) fail(`server/discover: ${JSON.stringify(discover)}`);
  else ok(`server/discover lists ${discover.supportedVersions.join(", ")}`);
} else if (era !== "legacy" || !version?.startsWith("2025-")) {
  fail(`default mode: era ${era} ${version}, want legacy 2025-*`);
} else {
  ok(`default mode: legacy era at ${version}`);
}
const server = client.getServerVersion();
if (server?.name !== "toolsvc") fail(`server identity ${JSON.stringify(server)}`);

// The client's own aggregate: without a cursor it walks every page and
// caches the whole list, which its outputSchema validation reads.
const { tools, nextCursor } = await client.listTools();
const want = Number(process.env.EXPECT_TOOLS || "0");
if (nextCursor !== undefined) fail(`aggregated tools/list has a nextCursor`);
if (tools.length === 0 || (want > 0 && tools.length !== want)) fail(`listed ${tools.length} tools, want ${want}`);
else ok(`listed ${tools.length} tools across every page`);

tools.sort((a, b) => (a.name === "sync-knowledge" ? -1 : b.name === "sync-knowledge" ? 1 : a.name.localeCompare(b.name)));
for (const tool of tools) {
  if (!tool.outputSchema) {
    fail(`${tool.name}: no outputSchema`);
    continue;
  }
  const example = tool._meta?.examples?.[0] ?? {};
  let result;
  try {
    // No toolDefinition: the client validates structuredContent against
    // the outputSchema of its cached tools/list aggregate, and throws on a
    // mismatch or a missing structuredContent.
    result = await client.callTool({ name: tool.name, arguments: example.params ?? {} });
  } catch (err) {
    fail(`${tool.name}: callTool threw ${err}`);
    continue;
  }
  if (modern && result.resultType !== undefined && result.resultType !== "complete") {
    fail(`${tool.name}: resultType ${result.resultType}`);
  }
  const text = result.content?.find((c) => c.type === "text")?.text;
  if (text === undefined || JSON.stringify(JSON.parse(text)) !== JSON.stringify(result.structuredContent)) {
    fail(`${tool.name}: text content differs from structuredContent`);
    continue;
  }
  // tools/list abridges the envelope; the whole outputSchema is a resource
  // the listed one names, and the result meets it too.
  const uri = `toolsvc://tools/${tool.name}/output-schema`;
  if (!JSON.stringify(tool.outputSchema).includes(uri) || JSON.stringify(tool.outputSchema).includes('"$ref"')) {
    fail(`${tool.name}: the listed outputSchema does not name ${uri}, or has a $ref`);
  }
  try {
    const { contents } = await client.readResource({ uri });
    const whole = new Ajv2020({ strict: false, allErrors: true }).compile(JSON.parse(contents[0].text));
    if (!whole(result.structuredContent)) fail(`${tool.name}: the whole outputSchema (${uri}) refuses the result: ${JSON.stringify(whole.errors).slice(0, 200)}`);
  } catch (err) {
    fail(`${tool.name}: read ${uri}: ${err}`);
  }
  if (example.expectedErrorCode) {
    if (!result.isError || result.structuredContent?.code !== example.expectedErrorCode) {
      fail(`${tool.name}: want error ${example.expectedErrorCode}, got ${JSON.stringify(result.structuredContent)}`);
    } else {
      ok(`${tool.name}: error ${example.expectedErrorCode} as its example expects`);
    }
    continue;
  }
  if (result.isError) {
    fail(`${tool.name}: isError ${JSON.stringify(result.structuredContent)}`);
    continue;
  }
  ok(`${tool.name}: structuredContent validated by the client against its outputSchema`);
}

// The validation above is real: an outputSchema the result cannot meet
// makes the client refuse the result.
const probe = tools.find((t) => t.name === "get-sync-status") ?? tools[0];
try {
  const impossible = { type: "object", required: ["notAFieldOfAnyResult"], properties: { notAFieldOfAnyResult: { type: "string" } } };
  await client.callTool(
    { name: probe.name, arguments: probe._meta?.examples?.[0]?.params ?? {} },
    { toolDefinition: { ...probe, outputSchema: impossible } },
  );
  fail(`${probe.name}: the client accepted a result its outputSchema refuses (validation is off)`);
} catch (err) {
  if (/output schema|outputSchema/i.test(String(err))) ok(`the client's outputSchema validation refuses a mismatch: ${String(err).slice(0, 80)}`);
  else fail(`${probe.name}: unexpected error ${err}`);
}

// Why the listing describes the envelope by a short shape and not by a
// $ref to a published schema: the client compiles outputSchema with ajv,
// which refuses a reference it cannot resolve, so the call fails.
try {
  const withRef = { type: "object", properties: { agentHints: { $ref: "toolsvc://schemas/agent-hints" } } };
  await client.callTool(
    { name: probe.name, arguments: probe._meta?.examples?.[0]?.params ?? {} },
    { toolDefinition: { ...probe, outputSchema: withRef } },
  );
  ok(`the client resolves a remote $ref in outputSchema (the short envelope could become a $ref)`);
} catch (err) {
  if (/resolve reference/i.test(String(err))) ok(`the client refuses an outputSchema with a remote $ref: ${String(err).slice(0, 80)}`);
  else fail(`${probe.name}: unexpected error for a remote $ref: ${err}`);
}

// A knowledge resource (sync-knowledge ran first).
const { resources } = await client.listResources();
const knowledge = resources.find((r) => r.uri.startsWith("knowledge://"));
if (!knowledge) {
  fail(`no knowledge:// resource among ${resources.length}`);
} else {
  const read = await client.readResource({ uri: knowledge.uri });
  const text = read.contents?.[0]?.text;
  if (read.contents?.[0]?.uri !== knowledge.uri || !text) fail(`resources/read ${knowledge.uri}: ${JSON.stringify(read).slice(0, 200)}`);
  else ok(`read ${knowledge.uri} (${text.length} characters)`);
}

// sync-knowledge as a task (the Tasks extension, io.modelcontextprotocol/
// tasks), modern era only. A second SDK client declares the extension in
// its capabilities (so the main loop above got plain results) and calls
// sync-knowledge: the server answers with a task handle, which SDK 2.4.0
// cannot consume (SdkError UNSUPPORTED_RESULT_TYPE naming 'task'), so the
// handle's arrival is checked there. Over HTTP the task is then driven on
// the wire, with the SDK's own _meta shape: started, polled with tasks/get
// to its result (checked against the outputSchema), and another cancelled
// with tasks/cancel. TASKS_SDK_SUPPORT: when the SDK learns Tasks, drive
// it all through the client instead.
if (modern) {
  const taskCaps = { extensions: { "io.modelcontextprotocol/tasks": {} } };
  const tc = new Client({ name: "toolsvc-ts2-tasks", version: "2.0.0" }, { ...options, capabilities: taskCaps });
  await tc.connect(newTransport());
  try {
    await tc.callTool({ name: "sync-knowledge", arguments: {} });
    fail(`the SDK client consumed a task result (SDK learnt Tasks: drive the scenario through it)`);
  } catch (err) {
    if (err?.code === "UNSUPPORTED_RESULT_TYPE" && err?.data?.resultType === "task") ok(`a task-declaring SDK client gets a task handle for sync-knowledge (SDK 2.4.0 cannot consume it)`);
    else fail(`sync-knowledge with Tasks declared: ${err}`);
  }
  await tc.close();
  if (!stdio) {
    let id = 1000;
    const rpc = async (method, params, name) => {
      const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream", "MCP-Protocol-Version": MODERN, "Mcp-Method": method };
      if (name) headers["Mcp-Name"] = name;
      if (process.env.MCP_TOKEN) headers.Authorization = `Bearer ${process.env.MCP_TOKEN}`;
      const _meta = { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientInfo": { name: "toolsvc-ts2-tasks", version: "2.0.0" }, "io.modelcontextprotocol/clientCapabilities": taskCaps };
      const res = await fetch(target[0], { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params: { ...params, _meta } }) });
      const msg = await res.json();
      if (msg.error) throw new Error(`${method}: ${JSON.stringify(msg.error)}`);
      return msg.result;
    };
    const start = () => rpc("tools/call", { name: "sync-knowledge", arguments: {} }, "sync-knowledge");
    const get = (taskId) => rpc("tasks/get", { taskId }, taskId);
    const sync = tools.find((t) => t.name === "sync-knowledge");
    const created = await start();
    if (created.resultType !== "task" || !created.taskId) {
      fail(`sync-knowledge as a task: ${JSON.stringify(created).slice(0, 200)}`);
    } else {
      let task = created;
      for (let i = 0; i < 120 && task.status === "working"; i++) {
        await new Promise((r) => setTimeout(r, 250));
        task = await get(created.taskId);
      }
      const sc = task.result?.structuredContent;
      const validate = new Ajv2020({ strict: false, allErrors: true }).compile(sync.outputSchema);
      if (task.status !== "completed" || !sc || task.result.isError) fail(`task ${created.taskId}: ${JSON.stringify(task).slice(0, 300)}`);
      else if (!validate(sc)) fail(`task result does not match sync-knowledge's outputSchema`);
      else ok(`sync-knowledge ran as a task: completed, its result matches the outputSchema`);
    }
    // Cancel one: a task that finished before the cancel arrived is tried
    // again, a few times.
    let cancelled = false;
    for (let i = 0; i < 5 && !cancelled; i++) {
      const t = await start();
      await rpc("tasks/cancel", { taskId: t.taskId }, t.taskId).catch((err) => console.log(`     ${err}`));
      let st = await get(t.taskId);
      for (let j = 0; j < 40 && st.status === "working"; j++) {
        await new Promise((r) => setTimeout(r, 250));
        st = await get(t.taskId);
      }
      cancelled = st.status === "cancelled";
    }
    if (cancelled) ok(`a sync-knowledge task cancelled with tasks/cancel ends cancelled`);
    else fail(`no sync-knowledge task ended cancelled in 5 tries`);
  }
}

await client.close();
console.log(`${passed} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
