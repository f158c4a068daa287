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
// cannot meet, and reads a knowledge resource.
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

// Pending: sync-knowledge as a task, and a cancelled one (the Tasks
// extension, issue 21, being built on branch h21a). TASKS_PENDING marks
// the hook; the Go test fails once the server advertises tasks while this
// hook is still pending, so it cannot be forgotten.
if (modern) {
  const caps = client.getServerCapabilities() ?? {};
  const tasks = caps.tasks ?? caps.extensions?.["io.modelcontextprotocol/tasks"];
  console.log(`pending tasks: server advertises tasks: ${tasks !== undefined}`);
}

await client.close();
console.log(`${passed} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
