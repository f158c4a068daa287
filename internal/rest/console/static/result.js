// result.js lays out a tool result for a person: the data, the agent hints
// (next actions, confidence, risks, warnings, ...), the metadata, or the
// ToolError of a failed call.

import { h, jsonView } from './dom.js';

const pct = (x) => `${Math.round(Number(x) * 100)}%`;
const has = (a) => Array.isArray(a) && a.length > 0;

/** badge renders a small label; tone picks its colour (e.g. "high", "ok"). */
export function badge(text, tone = 'neutral', title) {
  return h('span', { class: `badge tone-${String(tone).toLowerCase()}`, title }, text);
}

function section(title, ...body) {
  return h('section', { class: 'card' }, h('h3', { class: 'card-title' }, title), ...body);
}

function meter(value, label) {
  const v = Math.max(0, Math.min(1, Number(value) || 0));
  const tone = v >= 0.75 ? 'ok' : v >= 0.5 ? 'medium' : 'high';
  return h('div', { class: 'meter-row' },
    h('meter', { class: `meter tone-${tone}`, min: '0', max: '1', low: '0.5', high: '0.75', optimum: '1', value: String(v), 'aria-label': label }),
    h('span', { class: 'meter-value', text: pct(v) }));
}

function dl(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '').map(([k, v]) => [
    h('dt', { text: k }),
    h('dd', {}, v instanceof Node ? v : String(v)),
  ]));
}

function list(items, render = (x) => x) {
  return h('ul', { class: 'plain-list' }, items.map((x) => h('li', {}, render(x))));
}

/**
 * renderResult returns the result panel of a successful call. onAction, when
 * given, is called with a suggested action whose name is a known tool, to
 * open that tool prefilled with the action's data.
 */
export function renderResult(result, { isTool = () => false, onAction } = {}) {
  const hints = result.agentHints ?? {};
  const meta = result.metadata ?? {};
  return h('div', { class: 'result' },
    h('div', { class: 'result-status ok', role: 'status' },
      badge('Success', 'ok'),
      h('span', { text: `${meta.tool || 'tool'} ${meta.toolVersion ?? ''}`.trim() }),
      meta.executionTimeMs !== undefined ? h('span', { class: 'muted', text: `${Number(meta.executionTimeMs).toFixed(1)} ms` }) : null,
      meta.cached ? badge('cached', 'info') : null),
    h('div', { class: 'result-grid' },
      section('Data', jsonView(result.data ?? {}, 'Result data')),
      renderHints(hints, { isTool, onAction })),
    section('Metadata', dl([
      ['Tool', meta.tool], ['Tool version', meta.toolVersion], ['Timestamp', meta.timestamp],
      ['Execution time', meta.executionTimeMs !== undefined ? `${meta.executionTimeMs} ms` : undefined],
      ['Service version', meta.serviceVersion], ['Trace id', meta.traceId], ['Correlation id', meta.correlationId],
      ['Cached', meta.cached ? 'yes' : 'no'],
    ])));
}

/** renderHints lays out AgentHints. */
export function renderHints(hints, { isTool = () => false, onAction } = {}) {
  const impact = hints.estimatedImpact;
  const body = [
    h('div', { class: 'hint-summary' },
      h('div', { class: 'hint-stat' }, h('span', { class: 'stat-label', id: 'confidence-label', text: 'Confidence' }), meter(hints.confidence ?? 0, 'Confidence')),
      h('div', { class: 'hint-stat' }, h('span', { class: 'stat-label', text: 'Source quality' }), badge(hints.sourceQuality || 'unknown', quality(hints.sourceQuality))),
      h('div', { class: 'hint-stat' }, h('span', { class: 'stat-label', text: 'Valid for' }), badge(hints.validityPeriod || 'unknown', 'neutral')),
      impact ? h('div', { class: 'hint-stat' }, h('span', { class: 'stat-label', text: 'Estimated impact' }),
        h('span', { class: 'impact', text: `benefit ${pct(impact.benefit ?? 0)} · effort ${pct(impact.effort ?? 0)} · ROI ${Number(impact.roi ?? 0).toFixed(2)}` })) : null),
    hints.reasoning ? h('p', { class: 'reasoning' }, h('strong', { text: 'Reasoning. ' }), hints.reasoning) : null,
    h('h4', { text: 'Suggested next actions' }),
    has(hints.suggestedNextActions)
      ? h('ol', { class: 'actions' }, hints.suggestedNextActions.map((a) => renderAction(a, isTool, onAction)))
      : h('p', { class: 'muted', text: 'No suggested next actions.' }),
  ];
  if (has(hints.warnings)) {
    body.push(h('h4', { text: 'Warnings' }), h('ul', { class: 'callouts' }, hints.warnings.map((w) => h('li', { class: `callout tone-${w.severity || 'medium'}` },
      h('div', { class: 'callout-head' }, badge(w.severity || 'warning', w.severity), badge(w.type || 'warning', 'neutral')),
      h('p', { text: w.message }),
      w.suggestedFix ? h('p', { class: 'muted' }, h('strong', { text: 'Fix: ' }), w.suggestedFix) : null,
      has(w.relatedIds) ? h('p', { class: 'muted mono', text: w.relatedIds.join(', ') }) : null))));
  }
  if (has(hints.riskFactors)) {
    body.push(h('h4', { text: 'Risks' }), h('ul', { class: 'callouts' }, hints.riskFactors.map((r) => h('li', { class: `callout tone-${r.severity || 'medium'}` },
      h('div', { class: 'callout-head' }, badge(r.severity || 'risk', r.severity), badge(r.type || 'risk', 'neutral'),
        h('span', { class: 'muted', text: `probability ${pct(r.probability ?? 0)} · impact ${pct(r.impact ?? 0)}` })),
      h('p', { text: r.description }),
      r.mitigation ? h('p', { class: 'muted' }, h('strong', { text: 'Mitigation: ' }), r.mitigation) : null))));
  }
  const lists = [['Assumptions', hints.assumptions], ['Context needed', hints.contextNeeded], ['Constraints', hints.constraints]];
  for (const [title, items] of lists) if (has(items)) body.push(h('h4', { text: title }), list(items));
  if (has(hints.relatedResources)) {
    body.push(h('h4', { text: 'Related resources' }), list(hints.relatedResources, (r) => [
      badge(r.type, 'neutral'), ' ', h('span', { class: 'mono', text: r.id }), r.label ? ` — ${r.label}` : '',
      r.relevance !== undefined ? h('span', { class: 'muted', text: ` (relevance ${pct(r.relevance)})` }) : null,
    ]));
  }
  if (has(hints.alternatives)) {
    body.push(h('h4', { text: 'Alternatives' }), list(hints.alternatives, (a) => [
      h('strong', { text: a.approach }), h('span', { class: 'muted', text: ` (confidence ${pct(a.confidence ?? 0)})` }),
      a.reasoning ? h('div', { text: a.reasoning }) : null,
    ]));
  }
  if (has(hints.dependencies)) {
    body.push(h('h4', { text: 'Dependencies' }), list(hints.dependencies, (d) => [
      h('span', { class: 'mono', text: d.action }), ` after `, h('span', { class: 'mono', text: (d.dependsOn ?? []).join(', ') }),
      d.type ? [' ', badge(d.type, 'neutral')] : null, d.reason ? ` — ${d.reason}` : '',
    ]));
  }
  if (has(hints.preferenceAlignment)) {
    body.push(h('h4', { text: 'Preference alignment' }), list(hints.preferenceAlignment, (p) => [
      badge(p.alignment || 'neutral', { strong: 'ok', moderate: 'ok', conflict: 'high' }[p.alignment] ?? 'neutral'), ' ',
      h('span', { class: 'mono', text: p.action }), ` vs. “${p.preference}”`, p.explanation ? ` — ${p.explanation}` : '',
    ]));
  }
  return h('section', { class: 'card hints', 'aria-labelledby': 'hints-title' }, h('h3', { class: 'card-title', id: 'hints-title', text: 'Agent hints' }), ...body);
}

function renderAction(a, isTool, onAction) {
  const canOpen = onAction && isTool(a.action);
  return h('li', { class: 'action' },
    h('div', { class: 'action-head' },
      badge(a.priority || 'medium', a.priority || 'medium', 'Priority'),
      h('span', { class: 'action-name mono', text: a.action }),
      a.category ? badge(a.category, 'neutral') : null,
      a.confidence !== undefined ? h('span', { class: 'muted', text: `confidence ${pct(a.confidence)}` }) : null,
      canOpen ? h('button', { type: 'button', class: 'btn btn-small', onClick: () => onAction(a), 'aria-label': `Open ${a.action} with these arguments` }, 'Open tool') : null),
    a.description ? h('p', { text: a.description }) : null,
    a.expectedOutcome ? h('p', { class: 'muted' }, h('strong', { text: 'Expected: ' }), a.expectedOutcome) : null,
    a.data && Object.keys(a.data).length ? h('details', { class: 'disclosure' }, h('summary', { text: 'Arguments' }), jsonView(a.data, `${a.action} arguments`)) : null);
}

function quality(q) {
  return { high: 'ok', medium: 'medium', low: 'high' }[q] ?? 'neutral';
}

/** renderError lays out a ToolError (with the HTTP status it came with). */
export function renderError(status, err) {
  const violations = Array.isArray(err.fieldViolations) ? err.fieldViolations : [];
  return h('div', { class: 'result' },
    h('div', { class: 'result-status error', role: 'alert' },
      badge(err.code || 'ERROR', 'critical'),
      status ? h('span', { class: 'muted', text: `HTTP ${status}` }) : null,
      err.kind ? badge(err.kind, 'neutral') : null,
      err.retryable ? badge(err.retryAfterSeconds ? `retryable in ${err.retryAfterSeconds}s` : 'retryable', 'medium') : null),
    h('section', { class: 'card error-card' },
      h('h3', { class: 'card-title', text: 'Error' }),
      h('p', { class: 'error-message', text: err.message || 'The call failed.' }),
      violations.length ? [h('h4', { text: 'Field violations' }), list(violations, (v) => [
        h('span', { class: 'mono', text: v.field || '(request)' }), ': ', v.message || v.rule, v.rule ? h('span', { class: 'muted', text: ` (${v.rule})` }) : null,
      ])] : null,
      err.details && Object.keys(err.details).length ? h('details', { class: 'disclosure' }, h('summary', { text: 'Details' }), jsonView(err.details, 'Error details')) : null,
      dl([['Trace id', err.traceId]])));
}
