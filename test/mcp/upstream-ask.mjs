// upstream-ask.mjs puts the official TypeScript SDK clients before the
// tools of an upstream MCP server that ask the client questions, served by
// toolsvc (internal/tests/e2e, TestUpstreamQuestionsAnsweredByTypeScript):
// get-NS-name asks a form elicitation, get-NS-consent a URL-mode one,
// summarize-NS-sky samples the client's model and sync-NS-steps reports
// progress; each asking tool returns the answer as the upstream received
// it, so what the client answered is checked to arrive unchanged.
//
//   --sdk v1   @modelcontextprotocol/sdk 1.x, revision 2025-11-25
//   --sdk v2   @modelcontextprotocol/client 2.x pinned to 2026-07-28
//   --ns NS    the upstream's namespace in the tools' names
//   --bare     the client declares neither elicitation nor sampling
//
//   MCP_TOKEN=... node upstream-ask.mjs --sdk v1 --ns classic http://127.0.0.1:8080/mcp
//
// It prints one line per check ("ok   ..." or "FAIL ...") and exits non-zero
// on any failure.
import { checks, connectAsking } from "./askclient.mjs";

const args = process.argv.slice(2);
const sdk = args[args.indexOf("--sdk") + 1];
const ns = args[args.indexOf("--ns") + 1];
const bare = args.includes("--bare");
const url = args[args.length - 1];
if (!["v1", "v2"].includes(sdk) || !args.includes("--ns")) {
  console.error("usage: upstream-ask.mjs --sdk v1|v2 --ns NS [--bare] URL");
  process.exit(2);
}

const check = checks();
const { ok, fail } = check;
const { client, asked } = await connectAsking({
  sdk, bare, url, check,
  name: "toolsvc-ts-upstream-ask",
  formName: () => `Grace ${sdk}`,
  sampleText: "Blue, as ever.",
});

// call calls a tool; it returns its data, or the ToolError.
const call = async (name, options = {}) => {
  const params = { name, arguments: {} };
  const res = sdk === "v1" ? await client.callTool(params, undefined, options) : await client.callTool(params, options);
  if (res.isError) return { error: res.structuredContent };
  return { data: res.structuredContent.data };
};

if (bare) {
  const e = await call(`get-${ns}-name`);
  if (!e.error || !/did not declare the elicitation capability/.test(e.error.message)) fail(`elicitation without the capability: ${JSON.stringify(e)}`);
  else ok(`elicitation refused: ${e.error.message}`);
  const s = await call(`summarize-${ns}-sky`);
  if (!s.error || !/did not declare the sampling capability/.test(s.error.message)) fail(`sampling without the capability: ${JSON.stringify(s)}`);
  else ok(`sampling refused: ${s.error.message}`);
} else {
  const f = await call(`get-${ns}-name`);
  if (f.error || f.data.answer.action !== "accept" || f.data.answer.content?.name !== `Grace ${sdk}`) fail(`form elicitation: ${JSON.stringify(f)}`);
  else ok(`form elicitation answered, the upstream got ${JSON.stringify(f.data.answer)}`);
  const u = await call(`get-${ns}-consent`);
  const seen = asked[asked.length - 1];
  if (u.error || u.data.answer.action !== "accept") fail(`URL elicitation: ${JSON.stringify(u)}`);
  else if (seen?.mode !== "url" || seen?.url !== "https://archive.example/login?state=abc&x=%2F") fail(`URL elicitation asked ${JSON.stringify(seen)}`);
  else ok(`URL elicitation answered, URL unchanged: ${seen.url}`);
  const s = await call(`summarize-${ns}-sky`);
  if (s.error || s.data.answer.model !== "ts-model" || s.data.answer.content?.text !== "Blue, as ever.") fail(`sampling: ${JSON.stringify(s)}`);
  else ok(`sampling answered, the upstream got ${JSON.stringify(s.data.answer)}`);
  const heard = [];
  const p = await call(`sync-${ns}-steps`, { onprogress: (n) => heard.push(`${n.progress}/${n.total} ${n.message}`) });
  if (p.error || p.data.steps !== 2 || heard.join(",") !== "1/2 step 1,2/2 step 2") fail(`progress: ${JSON.stringify(p)}, heard ${JSON.stringify(heard)}`);
  else ok(`progress relayed: ${heard.join(",")}`);
}

await client.close();
check.done();
