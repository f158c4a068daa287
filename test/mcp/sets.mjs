// sets.mjs connects the official MCP TypeScript SDK clients to one tool
// set's endpoint (/mcp/sets/{set}, docs/OPERATIONS.md "Tool sets"), as an
// agent configured with that URL would, and checks that it sees that set
// only: tools/list holds exactly EXPECT_TOOLS (comma-separated names), a
// tool of the set answers, and OUTSIDE (a tool the server has but the set
// does not) is not there when called.
//
//   MCP_TOKEN=... EXPECT_TOOLS=a,b OUTSIDE=c node sets.mjs --client v1|v2-modern|v2-default URL
//
// It prints one line per check ("ok   ..." or "FAIL ...") and exits
// non-zero on any failure. v2 needs Node 22 or later.
const args = process.argv.slice(2);
if (args[0] !== "--client" || !["v1", "v2-modern", "v2-default"].includes(args[1]) || !args[2]) {
  console.error("usage: sets.mjs --client v1|v2-modern|v2-default URL");
  process.exit(2);
}
const kind = args[1];
const url = new URL(args[2]);
const headers = process.env.MCP_TOKEN ? { Authorization: `Bearer ${process.env.MCP_TOKEN}` } : {};
const want = (process.env.EXPECT_TOOLS || "").split(",").filter(Boolean).sort();
const outside = process.env.OUTSIDE || "";

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

let client;
if (kind === "v1") {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  client = new Client({ name: "toolsvc-sets-v1", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
} else {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const options = kind === "v2-modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {};
  client = new Client({ name: "toolsvc-sets-v2", version: "2.0.0" }, options);
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  ok(`connected in the ${client.getProtocolEra()} era at ${client.getNegotiatedProtocolVersion()}`);
}

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
if (JSON.stringify(names) !== JSON.stringify(want)) fail(`tools/list of the set: ${names.join(",")}, want ${want.join(",")}`);
else ok(`tools/list of the set holds exactly ${names.join(", ")}`);

const inSet = tools.find((t) => t.name === want[0]);
try {
  const example = inSet?._meta?.examples?.[0] ?? {};
  const result = await client.callTool({ name: want[0], arguments: example.params ?? {} });
  if (result.isError) fail(`${want[0]}: isError ${JSON.stringify(result.content)}`);
  else ok(`${want[0]}, a tool of the set, answers`);
} catch (err) {
  fail(`${want[0]}: callTool threw ${err}`);
}

if (outside) {
  let refused = false;
  let detail = "";
  try {
    const result = await client.callTool({ name: outside, arguments: {} });
    refused = result.isError === true && /unknown tool|not found/i.test(JSON.stringify(result.content));
    detail = JSON.stringify(result.content);
  } catch (err) {
    refused = /unknown tool/i.test(String(err));
    detail = String(err);
  }
  if (refused) ok(`${outside}, outside the set, is an unknown tool`);
  else fail(`${outside} outside the set: ${detail}`);
}

await client.close();
console.log(`${passed} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
