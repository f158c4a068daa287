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
// cannot meet, and reads a knowledge resource. In the modern era it runs
// sync-knowledge as a task of the Tasks extension and cancels one (on the
// SDK's transport: the 2.4 client refuses resultType "task").
//
//   node client2.mjs --era modern http://127.0.0.1:8080/mcp
//   node client2.mjs --era default --stdio /path/to/toolsvc mcp --db ... --knowledge-dir ...
//
// It prints one line per check ("ok   ..." or "FAIL ...") and exits non-zero
// on any failure. Node 22 or later (the client's engines).
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

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

// The Tasks extension (SEP-2663), modern era. The SDK client (2.4) has
// no client side for it: a tools/call answered with resultType "task" is
// refused as an unsupported result type (checked below, so that the day
// it learns tasks this check says so). The scenario then runs on the
// SDK's own transport, with the _meta the client sends plus the
// extension in clientCapabilities: sync-knowledge as a task polled to its
// result, and one cancelled.
if (modern) {
  const caps = client.getServerCapabilities() ?? {};
  if (caps.extensions?.["io.modelcontextprotocol/tasks"] === undefined) {
    fail(`server/discover does not advertise io.modelcontextprotocol/tasks: ${JSON.stringify(caps)}`);
  } else {
    const tasksCap = { extensions: { "io.modelcontextprotocol/tasks": {} } };
    const probeClient = new Client({ name: "toolsvc-ts2-tasks", version: "2.0.0" }, { ...options, capabilities: tasksCap });
    await probeClient.connect(newTransport());
    try {
      const any = { "~standard": { version: 1, vendor: "toolsvc-e2e", validate: (value) => ({ value }) } };
      await probeClient.request({ method: "tools/call", params: { name: "sync-knowledge", arguments: {} } }, any);
      fail("the SDK client accepted a task result: replace the transport-level scenario with the client's own tasks API");
    } catch (err) {
      if (/Unsupported result type 'task'/.test(String(err))) ok("the SDK client 2.4 has no Tasks client: it refuses resultType task (the server answered with a task)");
      else fail(`tasks probe: ${err}`);
    }
    await probeClient.close();

    const raw = newTransport();
    const pending = new Map();
    raw.onmessage = (m) => {
      if (m.id !== undefined && pending.has(m.id)) {
        pending.get(m.id)(m);
        pending.delete(m.id);
      }
    };
    await raw.start();
    raw.setProtocolVersion?.(MODERN);
    const meta = {
      "io.modelcontextprotocol/protocolVersion": MODERN,
      "io.modelcontextprotocol/clientInfo": { name: "toolsvc-ts2-tasks", version: "2.0.0" },
      "io.modelcontextprotocol/clientCapabilities": tasksCap,
    };
    let nextId = 1000;
    const rpc = (method, params) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        pending.set(id, (m) => (m.error ? reject(new Error(`${method}: ${m.error.code} ${m.error.message}`)) : resolve(m.result)));
        raw.send({ jsonrpc: "2.0", id, method, params: { ...params, _meta: meta } }).catch(reject);
      });
    const start = () => rpc("tools/call", { name: "sync-knowledge", arguments: { force: true } });
    const poll = async (taskId) => {
      for (let i = 0; i < 200; i++) {
        const t = await rpc("tasks/get", { taskId });
        if (t.status !== "working") return t;
        await new Promise((r) => setTimeout(r, 50));
      }
      return { status: "still working after 10s" };
    };
    try {
      const created = await start();
      if (created.resultType !== "task" || !created.taskId || created.status !== "working") {
        fail(`sync-knowledge with the Tasks extension: ${JSON.stringify(created).slice(0, 200)}`);
      } else {
        const done = await poll(created.taskId);
        if (done.status === "completed" && done.result?.structuredContent?.data && done.result.isError === false) ok(`sync-knowledge ran as task ${created.taskId.slice(0, 8)}… to its result`);
        else fail(`task ${created.taskId}: ${JSON.stringify(done).slice(0, 300)}`);
      }
      const second = await start();
      await rpc("tasks/cancel", { taskId: second.taskId });
      const ended = await poll(second.taskId);
      // Cancellation is cooperative: a sync that finished first completes.
      if (ended.status === "cancelled" || ended.status === "completed") ok(`task cancelled (ended ${ended.status})`);
      else fail(`cancelled task: ${JSON.stringify(ended).slice(0, 300)}`);
    } catch (err) {
      fail(`tasks: ${err}`);
    }
    await raw.close();
  }
}

await client.close();
console.log(`${passed} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
