// dom.js is the one way the console builds DOM: h() creates elements from
// text only (never HTML strings), so nothing a tool returns can inject markup.

/**
 * h creates an element. attrs: class, text, on{Event} handlers, dataset,
 * boolean properties (checked, disabled, hidden…) and plain attributes;
 * children are nodes, strings or (nested) arrays of them; null is skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k in PROPS) el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

const PROPS = { checked: 1, value: 1, selected: 1, disabled: 1, hidden: 1, open: 1, required: 1, multiple: 1 };

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** clear removes every child of el and appends children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/**
 * jsonView renders a JSON value as an indented, colour-coded <pre> built
 * from text nodes, with a copy-friendly plain text content.
 */
export function jsonView(value, label) {
  const code = h('code');
  render(code, value, 0);
  return h('pre', { class: 'json', tabindex: '0', 'aria-label': label ?? 'JSON' }, code);
}

function render(out, v, depth) {
  const pad = '  '.repeat(depth + 1);
  const close = '  '.repeat(depth);
  if (v === null) return out.append(h('span', { class: 'j-null', text: 'null' }));
  if (Array.isArray(v)) {
    if (!v.length) return out.append('[]');
    out.append('[\n');
    v.forEach((item, i) => {
      out.append(pad);
      render(out, item, depth + 1);
      out.append(i < v.length - 1 ? ',\n' : '\n');
    });
    return out.append(`${close}]`);
  }
  switch (typeof v) {
    case 'object': {
      const keys = Object.keys(v);
      if (!keys.length) return out.append('{}');
      out.append('{\n');
      keys.forEach((k, i) => {
        out.append(pad, h('span', { class: 'j-key', text: JSON.stringify(k) }), ': ');
        render(out, v[k], depth + 1);
        out.append(i < keys.length - 1 ? ',\n' : '\n');
      });
      return out.append(`${close}}`);
    }
    case 'string': return out.append(h('span', { class: 'j-str', text: JSON.stringify(v) }));
    case 'number': return out.append(h('span', { class: 'j-num', text: String(v) }));
    case 'boolean': return out.append(h('span', { class: 'j-bool', text: String(v) }));
    default: return out.append(String(v));
  }
}
