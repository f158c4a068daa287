// fleet.mjs is the MCP 2025-11-25 part of the fleet test's load
// (internal/tests/reliability/fleet_test.go): agents on the official TypeScript
// SDK v1 client, each holding one Streamable HTTP session through the load
// balancer and calling tools in a loop, reads and writes, every write with
// an idempotency key (_meta.idempotencyKey) and a unique token in its
// content so that the test can find it in the store afterwards.
//
//   FLEET_TOKENS=key1,key2 node fleet.mjs http://127.0.0.1:PORT/mcp DURATION_MS [ID_PREFIX]
//
// One session per token, all concurrent. It stops after DURATION_MS (or on
// SIGTERM) and prints one JSON line per logical call:
//   {"tr":"mcp2025","start":<epoch ms>,"ms":<ms to the final answer>,
//    "tool":..., "ok":bool, "attempts":n, "fails":[{"retryable":bool,"what":...}],
//    "token":<write token or "">, "principal":i, "session404":n}
// A retryable failure (connection reset or refused, HTTP 502/503/504, a
// tool error marked retryable, HTTP 404 for a session the replica does not
// know, after which the client opens a new session as the specification
// requires) is retried with the same idempotency key, within a bound.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

const [url, durationArg, prefix = "ts"] = process.argv.slice(2);
const duration = Number(durationArg);
const tokens = (process.env.FLEET_TOKENS || "").split(",").filter(Boolean);
if (!url || !(duration > 0) || tokens.length === 0) {
  console.error("usage: FLEET_TOKENS=k1,k2 node fleet.mjs URL DURATION_MS [ID_PREFIX]");
  process.exit(2);
}
const maxAttempts = 8; // per logical call
const maxCallMs = 20000; // per logical call, retries included
const paceMs = Number(process.env.FLEET_PACE_MS || "100");

let stopping = false;
process.on("SIGTERM", () => {
  stopping = true;
});
const deadline = Date.now() + duration;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");

// classify says whether a failed attempt may succeed if retried, and what it was.
function classify(err) {
  if (err instanceof StreamableHTTPError) {
    const code = err.code;
    if (code === 404) return { retryable: true, what: "http 404 session", session404: true };
    if (code === 502 || code === 503 || code === 504) return { retryable: true, what: `http ${code}` };
    if (code === 429) return { retryable: true, what: "http 429" };
    return { retryable: false, what: `http ${code}: ${err.message}` };
  }
  if (err instanceof McpError) {
    // -32001 is the SDK's request timeout: the outcome is unknown, and a
    // keyed retry is what a client does.
    if (err.code === -32001) return { retryable: true, what: "timeout" };
    return { retryable: false, what: `json-rpc ${err.code}: ${err.message}` };
  }
  const msg = String(err?.cause?.code || err?.cause?.message || err?.message || err);
  if (/ECONNRESET|ECONNREFUSED|EPIPE|UND_ERR_SOCKET|other side closed|socket hang up|fetch failed|terminated/i.test(msg)) {
    return { retryable: true, what: `connection: ${msg}` };
  }
  return { retryable: false, what: `other: ${msg}` };
}

async function connect(token) {
  const client = new Client({ name: "toolsvc-fleet", version: "1.0.0" });
  client.onerror = () => {}; // the standalone GET stream's reconnections
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    reconnectionOptions: { initialReconnectionDelay: 200, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 2, maxRetries: 2 },
  });
  await client.connect(transport);
  return client;
}

async function agent(p) {
  const token = tokens[p];
  let client = null;
  for (let seq = 0; !stopping && Date.now() < deadline && seq < 100000; seq++) {
    const write = seq % 3 === 0;
    const wtoken = write ? `${prefix}p${p}s${seq}x${Math.random().toString(36).slice(2, 10)}` : "";
    const req = write
      ? { name: "add-memory", arguments: { content: `fleet write ${wtoken} from the TypeScript SDK` }, _meta: { idempotencyKey: `k-${wtoken}` } }
      : seq % 3 === 1
        ? { name: "search-memories", arguments: { query: "fleet write" } }
        : { name: "query-knowledge", arguments: { query: "database selection" } };
    const rec = { tr: "mcp2025", start: Date.now(), tool: req.name, ok: false, attempts: 0, fails: [], token: wtoken, principal: p, session404: 0 };
    while (rec.attempts < maxAttempts && Date.now() - rec.start < maxCallMs) {
      rec.attempts++;
      try {
        if (!client) client = await connect(token);
        const res = await client.callTool(req, undefined, { timeout: 15000 });
        if (res.isError) {
          const sc = res.structuredContent || {};
          const f = { retryable: sc.retryable === true, what: `tool ${sc.code}: ${sc.message}`, unknown: sc.details?.outcome === "unknown" };
          rec.fails.push(f);
          if (!f.retryable) break;
        } else {
          rec.ok = true;
          break;
        }
      } catch (err) {
        const f = classify(err);
        rec.fails.push({ retryable: f.retryable, what: f.what });
        if (f.session404) rec.session404++;
        if (!f.retryable) break;
        // A session the answering replica does not know, or a connection
        // that broke: start a new session (the old one may be gone).
        if (f.session404 || /^connection/.test(f.what)) {
          const old = client;
          client = null;
          old?.close().catch(() => {});
        }
      }
      await sleep(Math.min(1000, 50 * 2 ** rec.attempts));
    }
    rec.ms = Date.now() - rec.start;
    emit(rec);
    await sleep(paceMs);
  }
  if (client) {
    try {
      await client.transport?.terminateSession?.();
    } catch {
      // the session's replica may be gone; nothing to end
    }
    await client.close().catch(() => {});
  }
}

await Promise.all(tokens.map((_, p) => agent(p)));
process.exit(0);
