// ask.mjs puts the official TypeScript SDK clients before a tool that asks
// the client questions (the test-only query-client of internal/mcpbridge,
// TestAskTypeScriptClients): elicitation in form and URL mode and sampling,
// answered by the client's own handlers, and a client that declared no such
// capability refused clearly.
//
//   --sdk v1   @modelcontextprotocol/sdk 1.x, revision 2025-11-25: the
//              questions arrive as server-to-client requests on the call's
//              event stream.
//   --sdk v2   @modelcontextprotocol/client 2.x pinned to 2026-07-28: the
//              questions arrive as input_required results, which the
//              client's multi-round-trip driver answers with a follow-up.
//   --bare     the client declares neither elicitation nor sampling.
//
//   MCP_TOKEN=... node ask.mjs --sdk v1 http://127.0.0.1:8080/mcp
//
// It prints one line per check ("ok   ..." or "FAIL ...") and exits non-zero
// on any failure.
import { checks, connectAsking } from "./askclient.mjs";

const args = process.argv.slice(2);
const sdk = args[args.indexOf("--sdk") + 1];
const bare = args.includes("--bare");
const url = args[args.length - 1];
if (!["v1", "v2"].includes(sdk)) {
  console.error("usage: ask.mjs --sdk v1|v2 [--bare] URL");
  process.exit(2);
}

const check = checks();
const { ok, fail } = check;
const { client, asked } = await connectAsking({
  sdk, bare, url, check,
  name: "toolsvc-ts-ask",
  formName: (asked) => `Ada ${asked.length}`,
  sampleText: "four",
});

// query calls query-client; it returns the answers, or the ToolError.
const query = async (method, params, times = 1) => {
  const res = await client.callTool({ name: "query-client", arguments: { method, paramsJson: JSON.stringify(params), times } });
  const sc = res.structuredContent;
  if (res.isError) return { error: sc };
  return { answers: sc.data.answersJson.map((a) => JSON.parse(a)) };
};

const form = {
  message: "Your name?",
  requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
};
const link =
  sdk === "v1"
    ? { mode: "url", message: "Sign in", url: "https://auth.example.test/consent?x=1", elicitationId: "e-1" }
    : { mode: "url", message: "Sign in", url: "https://auth.example.test/consent?x=1" };
const sampling = { messages: [{ role: "user", content: { type: "text", text: "2+2?" } }], maxTokens: 16 };

if (bare) {
  const e = await query("elicitation/create", form);
  if (!e.error || !/did not declare the elicitation capability/.test(e.error.message)) fail(`elicitation without the capability: ${JSON.stringify(e)}`);
  else ok(`elicitation refused: ${e.error.message}`);
  const s = await query("sampling/createMessage", sampling);
  if (!s.error || !/did not declare the sampling capability/.test(s.error.message)) fail(`sampling without the capability: ${JSON.stringify(s)}`);
  else ok(`sampling refused: ${s.error.message}`);
} else {
  const f = await query("elicitation/create", form, 2);
  if (f.error || f.answers.length !== 2 || f.answers[0].content?.name !== "Ada 1" || f.answers[1].content?.name !== "Ada 2")
    fail(`form elicitation: ${JSON.stringify(f)}`);
  else ok(`form elicitation answered twice: ${JSON.stringify(f.answers)}`);
  const u = await query("elicitation/create", link);
  const seen = asked[asked.length - 1];
  if (u.error || u.answers[0].action !== "accept") fail(`URL elicitation: ${JSON.stringify(u)}`);
  else if (seen?.url !== link.url || seen?.mode !== "url") fail(`URL elicitation asked ${JSON.stringify(seen)}`);
  else ok(`URL elicitation answered, URL unchanged: ${seen.url}`);
  const s = await query("sampling/createMessage", sampling);
  if (s.error || s.answers[0].model !== "ts-model" || s.answers[0].content?.text !== "four") fail(`sampling: ${JSON.stringify(s)}`);
  else ok(`sampling answered: ${JSON.stringify(s.answers[0])}`);
}

await client.close();
check.done();
