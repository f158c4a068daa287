// app.js drives the console: the API key, the tool list (by category, with
// tag filter and search), one tool's contract, its generated form, and the
// result of running it. Routing is the URL fragment: #/tool/NAME.

import { ApiError, callTool, curlFor, getKey, getTool, listTools, setKey } from './api.js';
import { h, jsonView, replace } from './dom.js';
import { ToolForm } from './form.js';
import { badge, renderError, renderResult } from './result.js';
import { buildForm, collect, fieldOf, prefill } from './schemaform.js';

const CATEGORY_ORDER = ['query', 'mutation', 'analysis', 'generation'];
const CATEGORY_LABEL = { query: 'Queries', mutation: 'Mutations', analysis: 'Analysis', generation: 'Generation' };

const $ = (id) => document.getElementById(id);
const els = {
  keyForm: $('key-form'), key: $('api-key'), forget: $('forget-key'), keyStatus: $('key-status'),
  sidebar: $('sidebar'), browse: $('browse-toggle'), browseCount: $('browse-count'), search: $('search'), tag: $('tag'), listStatus: $('list-status'), list: $('tool-list'), main: $('main'), detail: $('detail'),
};

const state = {
  tools: [], // ToolDefinitions the caller may see
  current: null, // { tool, versions, latest, form, model }
  pendingArgs: null, // arguments to prefill the next opened tool with
};

// ---- API key --------------------------------------------------------------

function showKeyState(message, tone = '') {
  replace(els.keyStatus, message);
  els.keyStatus.className = `key-status ${tone}`;
}

els.keyForm.addEventListener('submit', (e) => {
  e.preventDefault();
  setKey(els.key.value.trim());
  showKeyState(getKey() ? 'Key saved for this browser tab.' : 'No key: calls are anonymous.');
  loadTools();
});
els.forget.addEventListener('click', () => {
  setKey('');
  els.key.value = '';
  showKeyState('Key forgotten.');
  loadTools();
});

// ---- tool list -----------------------------------------------------------

async function loadTools() {
  replace(els.listStatus, 'Loading tools…');
  els.list.setAttribute('aria-busy', 'true');
  try {
    state.tools = await listTools();
    const tags = [...new Set(state.tools.flatMap((t) => t.tags ?? []))].sort();
    const chosen = els.tag.value;
    replace(els.tag, h('option', { value: '', text: 'All tags' }), tags.map((t) => h('option', { value: t, text: t })));
    els.tag.value = tags.includes(chosen) ? chosen : '';
    renderList();
    route();
  } catch (e) {
    state.tools = [];
    renderList();
    const err = e instanceof ApiError ? e.error : { message: String(e) };
    if (e.status === 401 || e.status === 403) {
      const msg = e.status === 403 ? 'This key may not list tools.' : getKey() ? 'This key was not accepted. Enter a valid API key.' : 'This server needs an API key.';
      showKeyState(msg, 'bad');
      els.key.focus();
    }
    replace(els.listStatus, h('span', { class: 'field-error', text: `Could not load tools: ${err.message}` }));
  } finally {
    els.list.removeAttribute('aria-busy');
  }
}

function matches(t, query, tag) {
  if (tag && !(t.tags ?? []).includes(tag)) return false;
  if (!query) return true;
  const hay = [t.name, t.title, t.description, t.domain, t.category, ...(t.tags ?? [])].join(' ').toLowerCase();
  return query.toLowerCase().split(/\s+/).every((w) => hay.includes(w));
}

function renderList() {
  const query = els.search.value.trim();
  const tag = els.tag.value;
  const shown = state.tools.filter((t) => matches(t, query, tag));
  const groups = new Map();
  for (const t of shown) {
    const c = t.category || 'other';
    if (!groups.has(c)) groups.set(c, []);
    groups.get(c).push(t);
  }
  const order = [...groups.keys()].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  replace(els.listStatus, state.tools.length ? `${shown.length} of ${state.tools.length} tools` : '');
  replace(els.browseCount, String(shown.length));
  replace(els.list, order.map((c) => h('section', { class: 'group', 'aria-labelledby': `group-${c}` },
    h('h2', { class: 'group-title', id: `group-${c}` }, CATEGORY_LABEL[c] ?? c, h('span', { class: 'count', text: String(groups.get(c).length) })),
    h('ul', { class: 'tool-list' }, groups.get(c).sort((a, b) => a.name.localeCompare(b.name)).map((t) => h('li', {},
      h('a', {
        class: 'tool-link', href: `#/tool/${encodeURIComponent(t.name)}`,
        'aria-current': state.current?.tool.name === t.name ? 'page' : undefined,
      },
      h('span', { class: 'tool-link-title', text: t.title || t.name }),
      h('span', { class: 'tool-link-name mono', text: t.name }),
      h('span', { class: 'tool-link-badges' },
        t.deprecated ? badge('deprecated', 'high') : null,
        t.annotations?.destructiveHint ? badge('destructive', 'critical') : null,
        t.annotations?.readOnlyHint ? badge('read-only', 'ok') : null))))))));
  if (state.tools.length && !shown.length) els.list.append(h('p', { class: 'muted', text: 'No tool matches the filter.' }));
}

const rank = (c) => (CATEGORY_ORDER.includes(c) ? CATEGORY_ORDER.indexOf(c) : CATEGORY_ORDER.length);

// On a phone the list sits above the tool; it folds away once a tool is open.
function showList(open) {
  els.sidebar.classList.toggle('collapsed', !open);
  els.browse.setAttribute('aria-expanded', String(open));
}
els.browse.addEventListener('click', () => showList(els.sidebar.classList.contains('collapsed')));

els.search.addEventListener('input', renderList);
els.tag.addEventListener('change', renderList);

// ---- routing ---------------------------------------------------------------

function route() {
  const m = /^#\/tool\/([^/?]+)/.exec(location.hash);
  const name = m ? decodeURIComponent(m[1]) : '';
  if (!name) {
    if (!state.current) renderWelcome();
    return;
  }
  if (state.current?.tool.name === name && !state.pendingArgs) return;
  openTool(name);
}
window.addEventListener('hashchange', route);

function renderWelcome() {
  replace(els.detail, h('div', { class: 'welcome' },
    h('h2', { text: 'Pick a tool' }),
    h('p', { text: 'Choose a tool on the left to read its contract and run it with a form generated from its input schema.' }),
    h('p', { class: 'muted', text: getKey() ? 'Calls use the API key saved for this tab.' : 'Enter an API key above if the server requires one.' })));
}

// ---- one tool ------------------------------------------------------------------

async function openTool(name, version) {
  const known = state.tools.find((t) => t.name === name);
  replace(els.detail, h('p', { class: 'muted', role: 'status', text: `Loading ${name}…` }));
  let resp;
  try {
    resp = await getTool(name, version);
  } catch (e) {
    if (!known || version) {
      replace(els.detail, renderError(e.status, e.error ?? { message: String(e) }));
      return;
    }
    resp = { tool: known, versions: [known.version] }; // The list already has the contract.
  }
  const tool = resp.tool;
  const versions = resp.versions?.length ? resp.versions : [tool.version];
  const model = buildForm(tool.inputSchema ?? {});
  const form = new ToolForm(model);
  state.current = { tool, versions, latest: versions[versions.length - 1], model, form };
  // A form starts empty but for the schema's defaults: an example's values
  // (tags, layers, a limit) would be sent by a person who never chose them.
  // "Use example" fills one in on purpose.
  const args = state.pendingArgs ?? {};
  state.pendingArgs = null;
  form.fill(prefill(model, args));
  renderDetail();
  renderList();
  showList(false);
  const heading = $('tool-title');
  heading?.focus({ preventScroll: false });
}

// formNote is the input schema's description for a person: without the
// contract's opening sentence about its proto message ("AddMemoryRequest
// is the input of add-memory."), which names an internal type.
function formNote(description = '') {
  return description.replace(/^[A-Z][A-Za-z0-9]*Request\b[^.]*\.\s*/, '').replace(/\s+/g, ' ').trim();
}

function annotationBadges(a = {}) {
  return h('ul', { class: 'annotations', 'aria-label': 'Annotations' },
    h('li', {}, badge(a.readOnlyHint ? 'Read-only' : 'Writes data', a.readOnlyHint ? 'ok' : 'medium', 'readOnlyHint')),
    h('li', {}, badge(a.destructiveHint ? 'Destructive' : 'Non-destructive', a.destructiveHint ? 'critical' : 'neutral', 'destructiveHint')),
    h('li', {}, badge(a.idempotentHint ? 'Idempotent' : 'Not idempotent', a.idempotentHint ? 'ok' : 'neutral', 'idempotentHint')),
    h('li', {}, badge(a.openWorldHint ? 'Open world' : 'Closed world', a.openWorldHint ? 'info' : 'neutral', 'openWorldHint')));
}

function contractFacts(t) {
  const rows = [
    ['Permissions', (t.permissions ?? []).join(', ') || 'none'],
    ['Response time', t.responseTime],
    ['Cache', t.cacheable ? `cached for ${t.cacheTtl}s` : 'not cached'],
    ['Rate limit', t.rateLimit?.maxCalls ? `${t.rateLimit.maxCalls} calls / ${Math.round((t.rateLimit.windowMs ?? 0) / 1000)}s` : undefined],
    ['Cost', t.cost?.units ? `${t.cost.units} ${t.cost.unit ?? 'units'}` : undefined],
    ['Side effects', t.sideEffect ? 'yes' : 'no'],
    ['Deterministic', t.deterministic ? 'yes' : 'no'],
    ['Tenant-scoped', t.tenantScoped ? 'yes' : 'no'],
    ['REST', t.http?.path ? `${t.http.method} ${t.http.path}` : undefined],
    ['gRPC', t.grpcMethod],
  ];
  return h('dl', { class: 'kv facts' }, rows.filter(([, v]) => v).map(([k, v]) => [h('dt', { text: k }), h('dd', { class: /REST|gRPC|Permissions/.test(k) ? 'mono' : '', text: v })]));
}

function deprecationNotice(d) {
  if (!d) return null;
  return h('div', { class: 'callout tone-high deprecation', role: 'note' },
    h('strong', { text: `Deprecated${d.since ? ` since ${d.since}` : ''}.` }),
    d.replacement ? [' Use ', h('a', { href: `#/tool/${encodeURIComponent(d.replacement)}`, class: 'mono', text: d.replacement }), ' instead.'] : null,
    d.removalDate ? ` It stops answering on ${d.removalDate}.` : null);
}

function renderDetail() {
  const { tool: t, versions, model, form } = state.current;
  const versionPicker = versions.length > 1
    ? h('label', { class: 'version-picker' }, 'Version ',
      h('select', {
        id: 'version', onChange: (e) => openTool(t.name, e.target.value),
      }, versions.map((v) => h('option', { value: v, selected: v === t.version, text: v }))))
    : h('span', { class: 'version mono', text: `v${t.version}` });

  const exampleSelect = (t.examples ?? []).length > 1
    ? h('label', { class: 'inline-label' }, 'Example ', h('select', {
      id: 'example-picker', onChange: (e) => fillExample(Number(e.target.value)),
    }, t.examples.map((ex, i) => h('option', { value: String(i), text: ex.description || `Example ${i + 1}` }))))
    : null;

  const runForm = h('form', { id: 'run-form', class: 'run-form', method: 'post', novalidate: true, 'aria-labelledby': 'run-title', onSubmit: (e) => { e.preventDefault(); run(); } },
    formNote(model.description) ? h('p', { class: 'help form-note', text: formNote(model.description) }) : null,
    form.el,
    h('div', { class: 'form-actions' },
      h('button', { type: 'submit', class: 'btn btn-primary', id: 'run-button' }, 'Run ', h('span', { class: 'mono', text: t.name })),
      t.examples?.length ? h('button', { type: 'button', class: 'btn', onClick: () => fillExample(Number($('example-picker')?.value ?? 0)) }, 'Use example') : null,
      h('button', { type: 'button', class: 'btn btn-quiet', onClick: () => form.fill(prefill(model, {})) }, 'Clear'),
      exampleSelect));

  replace(els.detail,
    h('article', { class: 'tool', 'aria-labelledby': 'tool-title' },
      h('header', { class: 'tool-header' },
        h('div', { class: 'tool-heading' },
          h('h2', { id: 'tool-title', tabindex: '-1', text: t.title || t.name }),
          h('div', { class: 'tool-sub' }, h('code', { class: 'tool-name', text: t.name }), versionPicker,
            badge(t.category || 'tool', 'info'), t.domain ? badge(t.domain, 'neutral') : null)),
        annotationBadges(t.annotations)),
      deprecationNotice(t.deprecated),
      h('p', { class: 'description', text: t.description }),
      (t.tags ?? []).length ? h('p', { class: 'tags' }, h('span', { class: 'visually-hidden', text: 'Tags: ' }), t.tags.map((g) => h('span', { class: 'tag', text: `#${g}` }))) : null,
      h('section', { class: 'card run-card' }, h('h3', { class: 'card-title', id: 'run-title', text: 'Run' }), runForm),
      h('section', { id: 'result', class: 'result-region', 'aria-labelledby': 'result-title', hidden: true },
        h('h3', { id: 'result-title', class: 'section-title', tabindex: '-1', text: 'Result' }),
        h('div', { id: 'result-body' })),
      h('details', { class: 'card disclosure', open: true },
        h('summary', { class: 'card-title' }, `Examples (${(t.examples ?? []).length})`),
        renderExamples(t.examples ?? [])),
      h('details', { class: 'card disclosure' }, h('summary', { class: 'card-title', text: 'Input schema' }), jsonView(t.inputSchema ?? {}, 'Input schema')),
      h('details', { class: 'card disclosure' }, h('summary', { class: 'card-title', text: 'Output schema' }), jsonView(t.outputSchema ?? {}, 'Output schema')),
      h('details', { class: 'card disclosure' }, h('summary', { class: 'card-title', text: 'Contract details' }), contractFacts(t)),
      h('details', { class: 'card disclosure', id: 'request-details' }, h('summary', { class: 'card-title', text: 'Request as curl' }), h('pre', { class: 'json', id: 'curl', tabindex: '0' }))));
  updateCurl();
  runForm.addEventListener('input', updateCurl);
  runForm.addEventListener('change', updateCurl);
}

function renderExamples(examples) {
  if (!examples.length) return h('p', { class: 'muted', text: 'No examples.' });
  return h('ol', { class: 'examples' }, examples.map((ex, i) => h('li', { class: 'example' },
    h('div', { class: 'example-head' },
      h('strong', { text: ex.description || `Example ${i + 1}` }),
      ex.expectedErrorCode ? badge(`expects ${ex.expectedErrorCode}`, 'high') : badge('expects success', 'ok'),
      h('button', { type: 'button', class: 'btn btn-small', onClick: () => { fillExample(i); $('run-title')?.scrollIntoView({ block: 'start' }); } }, 'Use this example')),
    h('div', { class: 'example-grid' },
      h('div', {}, h('h4', { text: 'Arguments' }), jsonView(ex.params ?? {}, 'Example arguments')),
      ex.expectedResult && Object.keys(ex.expectedResult).length
        ? h('div', {}, h('h4', { text: ex.expectedErrorCode ? 'Expected error' : 'Expected data (subset)' }), jsonView(ex.expectedResult, 'Expected result'))
        : null))));
}

function fillExample(i) {
  const { tool, model, form } = state.current;
  form.fill(prefill(model, tool.examples?.[i]?.params ?? {}));
  const picker = $('example-picker');
  if (picker) picker.value = String(i);
  updateCurl();
}

function updateCurl() {
  const pre = $('curl');
  if (!pre || !state.current) return;
  const { tool, model, form, latest } = state.current;
  const { args } = collect(model, form.raws());
  replace(pre, curlFor(location.origin, tool.name, args, tool.version === latest ? '' : tool.version));
}

// ---- running -------------------------------------------------------------

async function run() {
  const cur = state.current;
  const { args, errors } = collect(cur.model, cur.form.raws());
  const first = cur.form.showErrors(errors);
  const region = $('result');
  const body = $('result-body');
  if (first) {
    region.hidden = false;
    replace(body, h('p', { class: 'field-error', role: 'alert', text: 'Fix the highlighted fields, then run again.' }));
    first.focus();
    return;
  }
  const button = $('run-button');
  button.disabled = true;
  region.hidden = false;
  region.setAttribute('aria-busy', 'true');
  replace(body, h('p', { class: 'muted', role: 'status', text: `Running ${cur.tool.name}…` }));
  try {
    const result = await callTool(cur.tool.name, args, cur.tool.version === cur.latest ? '' : cur.tool.version);
    if (state.current !== cur) return;
    replace(body, renderResult(result, {
      isTool: (name) => state.tools.some((t) => t.name === name),
      onAction: (a) => {
        state.pendingArgs = a.data ?? {};
        location.hash = `#/tool/${encodeURIComponent(a.action)}`;
        if (a.action === cur.tool.name) route();
      },
    }));
  } catch (e) {
    if (state.current !== cur) return;
    const err = e instanceof ApiError ? e.error : { code: 'CLIENT_ERROR', message: String(e) };
    const byField = {};
    for (const v of err.fieldViolations ?? []) {
      const name = fieldOf(cur.model, v.field);
      if (name) (byField[name] ??= []).push(v.message || v.rule);
    }
    cur.form.showErrors(byField);
    replace(body, renderError(e.status, err));
    if (e.status === 401) showKeyState('The server needs a valid API key for this call.', 'bad');
  } finally {
    button.disabled = false;
    region.removeAttribute('aria-busy');
  }
  $('result-title')?.focus();
}

// ---- start -----------------------------------------------------------------

if (getKey()) {
  els.key.value = getKey();
  showKeyState('Using the key saved for this browser tab.');
}
renderWelcome();
loadTools();
