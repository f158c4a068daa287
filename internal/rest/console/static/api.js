// api.js calls toolsvc's REST routes. The API key lives in sessionStorage
// (this tab only) and travels only in the Authorization header — never in a
// URL, a log line or the page.

const KEY = 'toolsvc.console.apiKey';

/** getKey returns the API key saved for this tab, or "". */
export function getKey() {
  try {
    return sessionStorage.getItem(KEY) ?? '';
  } catch {
    return '';
  }
}

/** setKey saves key for this tab; an empty key forgets it. */
export function setKey(key) {
  try {
    if (key) sessionStorage.setItem(KEY, key);
    else sessionStorage.removeItem(KEY);
  } catch {
    // Storage can be disabled; the key then lasts until the page closes.
  }
}

/**
 * ApiError is a failed call: status is the HTTP status (0 when the server
 * could not be reached) and error the ToolError from the body, always with
 * at least code and message.
 */
export class ApiError extends Error {
  constructor(status, error) {
    super(error.message || error.code);
    this.name = 'ApiError';
    this.status = status;
    this.error = error;
  }
}

async function request(method, path, body) {
  const headers = { Accept: 'application/json' };
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let resp;
  try {
    resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, { code: 'UNAVAILABLE', message: `The server could not be reached (${e.message}).`, retryable: true });
  }
  const text = await resp.text();
  let json;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    json = undefined;
  }
  if (!resp.ok) {
    const err = json?.error && typeof json.error === 'object' ? json.error : { code: `HTTP_${resp.status}`, message: text.slice(0, 500) || resp.statusText };
    if (!err.retryAfterSeconds && resp.headers.get('Retry-After')) err.retryAfterSeconds = Number(resp.headers.get('Retry-After'));
    throw new ApiError(resp.status, err);
  }
  if (json === undefined) throw new ApiError(resp.status, { code: 'BAD_RESPONSE', message: 'The server answered with something that is not JSON.' });
  return json;
}

/** listTools returns every tool the caller may see, following pages. */
export async function listTools() {
  const tools = [];
  let token = '';
  for (let i = 0; i < 100; i++) {
    const q = new URLSearchParams({ pageSize: '200' });
    if (token) q.set('pageToken', token);
    const page = await request('GET', `/v1/tools?${q}`);
    tools.push(...(page.tools ?? []));
    token = page.nextPageToken ?? '';
    if (!token) break;
  }
  return tools;
}

/** getTool returns { tool, versions } of one tool, optionally one version. */
export function getTool(name, version) {
  const q = version ? `?${new URLSearchParams({ version })}` : '';
  return request('GET', `/v1/tools/${encodeURIComponent(name)}${q}`);
}

/** callTool calls a tool with args and returns { data, agentHints, metadata }. */
export function callTool(name, args, version) {
  const q = version ? `?${new URLSearchParams({ version })}` : '';
  return request('POST', `/v1/tools/${encodeURIComponent(name)}:call${q}`, args);
}

/** curlFor returns a curl command equivalent to callTool, with the key as $TOOLSVC_API_KEY. */
export function curlFor(origin, name, args, version) {
  const q = version ? `?version=${encodeURIComponent(version)}` : '';
  const body = JSON.stringify(args).replaceAll("'", "'\\''");
  return [
    `curl -sS -X POST '${origin}/v1/tools/${encodeURIComponent(name)}:call${q}'`,
    `  -H "Authorization: Bearer $TOOLSVC_API_KEY"`,
    `  -H 'Content-Type: application/json'`,
    `  -d '${body}'`,
  ].join(' \\\n');
}
