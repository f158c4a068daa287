// client.mjs drives toolsvc with the official MCP TypeScript SDK client:
// it lists every page of tools, calls each tool with its first example, and
// validates every structuredContent against the tool's outputSchema with
// Ajv (JSON Schema 2020-12) itself, because the SDK validates only the
// tools of the last page it listed, and against the whole outputSchema,
// read from the resource toolsvc://tools/{name}/output-schema.
//
//   node client.mjs http://127.0.0.1:8080/mcp
//   node client.mjs --stdio /path/to/toolsvc mcp --db ... --knowledge-dir ...
//
// It prints one line per check and exits non-zero on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const args = process.argv.slice(2);
let transport;
if (args[0] === "--stdio") {
  transport = new StdioClientTransport({ command: args[1], args: args.slice(2), stderr: "inherit" });
} else {
  const headers = process.env.MCP_TOKEN ? { Authorization: `Bearer ${process.env.MCP_TOKEN}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(args[0]), { requestInit: { headers } });
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
let failures = 0;
const fail = (msg) => {
  failures++;
  console.log(`FAIL ${msg}`);
};

const client = new Client({ name: "toolsvc-ts-e2e", version: "1.0.0" });
await client.connect(transport);

// Every page of tools.
const tools = [];
let cursor;
let pages = 0;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools);
  cursor = page.nextCursor;
  pages++;
} while (cursor);
console.log(`listed ${tools.length} tools in ${pages} pages`);
if (tools.length === 0) fail("no tools");
const minPages = Number(process.env.MIN_PAGES || "1");
if (pages < minPages) fail(`only ${pages} pages, want at least ${minPages}`);

// sync-knowledge first, so the knowledge tools' examples find their items.
tools.sort((a, b) => (a.name === "sync-knowledge" ? -1 : b.name === "sync-knowledge" ? 1 : a.name.localeCompare(b.name)));
for (const tool of tools) {
  for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
    if (typeof tool.annotations?.[hint] !== "boolean") fail(`${tool.name}: annotations.${hint} missing`);
  }
  if (!tool.outputSchema) {
    fail(`${tool.name}: no outputSchema`);
    continue;
  }
  const validate = ajv.compile(tool.outputSchema);
  const example = tool._meta?.examples?.[0] ?? {};
  let result;
  try {
    result = await client.callTool({ name: tool.name, arguments: example.params ?? {} });
  } catch (err) {
    fail(`${tool.name}: callTool threw ${err}`);
    continue;
  }
  const text = result.content?.find((c) => c.type === "text")?.text;
  if (text === undefined || JSON.stringify(JSON.parse(text)) !== JSON.stringify(result.structuredContent)) {
    fail(`${tool.name}: text content differs from structuredContent`);
  }
  // The listed outputSchema abridges the envelope; the whole one is the
  // resource it names, and the result meets it too.
  try {
    const { contents } = await client.readResource({ uri: `toolsvc://tools/${tool.name}/output-schema` });
    const whole = new Ajv2020({ strict: false, allErrors: true });
    addFormats(whole);
    const check = whole.compile(JSON.parse(contents[0].text));
    if (!check(result.structuredContent)) fail(`${tool.name}: the whole outputSchema refuses the result: ${whole.errorsText(check.errors)}`);
  } catch (err) {
    fail(`${tool.name}: read its whole outputSchema: ${err}`);
  }
  if (example.expectedErrorCode) {
    if (!result.isError || result.structuredContent?.code !== example.expectedErrorCode) {
      fail(`${tool.name}: want error ${example.expectedErrorCode}, got ${JSON.stringify(result.structuredContent)}`);
    } else if (!validate(result.structuredContent)) {
      fail(`${tool.name}: error structuredContent does not match outputSchema: ${ajv.errorsText(validate.errors)}`);
    } else {
      console.log(`ok   ${tool.name}: error ${example.expectedErrorCode} as its example expects`);
    }
    continue;
  }
  if (result.isError) {
    fail(`${tool.name}: isError ${JSON.stringify(result.structuredContent)}`);
    continue;
  }
  if (!validate(result.structuredContent)) {
    fail(`${tool.name}: structuredContent does not match outputSchema: ${ajv.errorsText(validate.errors)}`);
    continue;
  }
  console.log(`ok   ${tool.name}: structuredContent matches its outputSchema`);
}

await client.close();
console.log(`${tools.length - failures} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
