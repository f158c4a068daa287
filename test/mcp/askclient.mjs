// askclient.mjs is what ask.mjs and upstream-ask.mjs share: the official
// TypeScript SDK client of either generation, connected over Streamable
// HTTP with handlers that answer toolsvc's questions (elicitation in form
// and URL mode, sampling) and remember what was asked, and the checks'
// bookkeeping.
//
//   v1: @modelcontextprotocol/sdk 1.x, revision 2025-11-25: questions come
//       as server-to-client requests on the call's event stream.
//   v2: @modelcontextprotocol/client 2.x pinned to 2026-07-28: questions
//       come as input_required results, answered by the client's
//       multi-round-trip driver with a follow-up.
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as HTTPV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client as ClientV2, StreamableHTTPClientTransport as HTTPV2 } from "@modelcontextprotocol/client";

// checks counts "ok"/"FAIL" lines; done prints the tally and exits.
export function checks() {
  let failures = 0;
  let passed = 0;
  return {
    ok: (msg) => {
      passed++;
      console.log(`ok   ${msg}`);
    },
    fail: (msg) => {
      failures++;
      console.log(`FAIL ${msg}`);
    },
    done: () => {
      console.log(`${passed} passed, ${failures} failed`);
      process.exit(failures ? 1 : 0);
    },
  };
}

// connectAsking connects a client of sdk ("v1" or "v2") named name to url
// with MCP_TOKEN. Unless bare it declares elicitation (form and URL) and
// sampling, and answers: a form with {name: formName(asked)}, a URL with
// accept, sampling with sampleText. It returns the client and the params
// of every question asked, in order.
export async function connectAsking({ sdk, bare, url, name, formName, sampleText, check }) {
  const capabilities = bare ? {} : { elicitation: { form: {}, url: {} }, sampling: {} };
  const headers = { Authorization: `Bearer ${process.env.MCP_TOKEN}` };
  const asked = [];
  const onElicit = (params) => {
    asked.push(params);
    if (params.mode === "url") return { action: "accept" };
    return { action: "accept", content: { name: formName(asked) } };
  };
  const onSample = (params) => {
    asked.push(params);
    return { model: "ts-model", role: "assistant", content: { type: "text", text: sampleText } };
  };
  let client;
  if (sdk === "v1") {
    client = new ClientV1({ name, version: "1.0.0" }, { capabilities });
    if (!bare) {
      client.setRequestHandler(ElicitRequestSchema, async (req) => onElicit(req.params));
      client.setRequestHandler(CreateMessageRequestSchema, async (req) => onSample(req.params));
    }
    await client.connect(new HTTPV1(new URL(url), { requestInit: { headers } }));
  } else {
    client = new ClientV2({ name: name.replace("-ts-", "-ts2-"), version: "2.0.0" }, { capabilities, versionNegotiation: { mode: { pin: "2026-07-28" } } });
    if (!bare) {
      client.setRequestHandler("elicitation/create", async (req) => onElicit(req.params));
      client.setRequestHandler("sampling/createMessage", async (req) => onSample(req.params));
    }
    await client.connect(new HTTPV2(new URL(url), { requestInit: { headers } }));
    const v = client.getNegotiatedProtocolVersion();
    if (v !== "2026-07-28") check.fail(`negotiated ${v}, want 2026-07-28`);
    else check.ok(`pinned to ${v}`);
  }
  return { client, asked };
}
