// schemaform.js turns a tool's input schema (JSON Schema 2020-12, as the
// registry derives it from the request message) into a form model, turns the
// form's raw control values back into call arguments, and checks them.
// It is pure — no DOM — so node --test runs it against every real tool.

// HANDLED_KEYWORDS are the schema keywords this module interprets. A schema
// using any other keyword is reported by unhandledKeywords, so a contract
// that starts using one fails the console's tests instead of silently
// producing a wrong form.
export const HANDLED_KEYWORDS = Object.freeze([
  '$schema', '$id', '$comment', '$ref', '$defs', 'definitions',
  'title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly',
  'type', 'enum', 'const',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'minLength', 'maxLength', 'pattern', 'format', 'contentEncoding', 'contentMediaType',
  'items', 'minItems', 'maxItems', 'uniqueItems',
  'properties', 'required', 'additionalProperties', 'propertyNames', 'minProperties', 'maxProperties',
  'anyOf', 'oneOf', 'allOf', 'not',
]);

const handled = new Set(HANDLED_KEYWORDS);

// Strings longer than this get a multi-line text area.
const LONG_TEXT = 1000;

const FORMATS = {
  'date-time': { inputType: 'text', placeholder: '2025-01-31T12:00:00Z', re: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i, what: 'an RFC 3339 date-time' },
  date: { inputType: 'date', re: /^\d{4}-\d{2}-\d{2}$/, what: 'a date (YYYY-MM-DD)' },
  email: { inputType: 'email', re: /^[^\s@]+@[^\s@]+$/, what: 'an email address' },
  uri: { inputType: 'url', re: /^[a-z][a-z0-9+.-]*:\S*$/i, what: 'a URI' },
  uuid: { inputType: 'text', placeholder: '00000000-0000-0000-0000-000000000000', re: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, what: 'a UUID' },
};

/** resolve follows a local "$ref" ("#/$defs/X") against root; other schemas pass through. */
export function resolve(schema, root) {
  let s = schema;
  for (let hops = 0; s && typeof s === 'object' && typeof s.$ref === 'string' && hops < 32; hops++) {
    if (!s.$ref.startsWith('#')) return s;
    let target = root;
    for (const raw of s.$ref.slice(1).split('/').filter(Boolean)) {
      const part = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
      target = target?.[part];
    }
    if (!target) return s;
    const { $ref, ...rest } = s;
    s = { ...target, ...rest };
  }
  return s;
}

/** schemaType returns the one non-null type of s, inferring it from enum/const/properties/items when absent. */
export function schemaType(s) {
  if (!s || typeof s !== 'object') return undefined;
  if (Array.isArray(s.type)) return s.type.find((t) => t !== 'null');
  if (s.type) return s.type;
  const values = s.enum ?? ('const' in s ? [s.const] : undefined);
  if (values?.length) {
    const t = typeof values.find((v) => v !== null);
    return t === 'number' ? 'number' : t;
  }
  if (s.properties) return 'object';
  if (s.items) return 'array';
  return undefined;
}

const nullable = (s) => Array.isArray(s.type) && s.type.includes('null');

/**
 * unhandledKeywords walks schema and returns every keyword this module does
 * not interpret, as "path: keyword" strings (empty when all is handled).
 */
export function unhandledKeywords(schema) {
  const out = [];
  const walk = (s, path) => {
    if (typeof s === 'boolean' || s === null || typeof s !== 'object') return;
    for (const [k, v] of Object.entries(s)) {
      if (!handled.has(k)) {
        out.push(`${path || '/'}: ${k}`);
        continue;
      }
      switch (k) {
        case 'properties':
        case '$defs':
        case 'definitions':
          for (const [name, sub] of Object.entries(v ?? {})) walk(sub, `${path}/${k}/${name}`);
          break;
        case 'items':
        case 'additionalProperties':
        case 'propertyNames':
        case 'not':
          walk(v, `${path}/${k}`);
          break;
        case 'anyOf':
        case 'oneOf':
        case 'allOf':
          (v ?? []).forEach((sub, i) => walk(sub, `${path}/${k}/${i}`));
          break;
      }
    }
  };
  walk(schema, '');
  return out;
}

/**
 * buildForm returns the form model of an object schema:
 * { description, fields: [Field] }, fields in schema order with required
 * ones first. A Field is { name, label, kind, required, help, constraints,
 * default, options, inputType, placeholder, step, min, max, minLength,
 * maxLength, pattern, schema }, where kind is one of
 * text | textarea | select | number | checkbox | list | multi | json.
 */
export function buildForm(schema) {
  const root = schema ?? {};
  const s = resolve(root, root);
  const required = new Set(s.required ?? []);
  const names = Object.keys(s.properties ?? {});
  names.sort((a, b) => Number(required.has(b)) - Number(required.has(a)));
  const fields = names.map((name) => buildField(name, resolve(s.properties[name], root), required.has(name), root));
  return { description: s.description ?? '', fields, root };
}

function buildField(name, s, required, root) {
  const type = schemaType(s);
  const f = {
    name,
    label: s.title || humanize(name),
    required,
    help: s.description ?? '',
    constraints: describe(s, root),
    default: s.default,
    deprecated: Boolean(s.deprecated),
    schema: s,
    kind: 'json',
  };
  const values = s.enum ?? ('const' in s ? [s.const] : undefined);
  if (s.anyOf || s.oneOf || s.allOf || s.not) {
    f.kind = 'json';
  } else if (values) {
    f.kind = 'select';
    f.options = values.filter((v) => v !== null);
  } else if (type === 'string') {
    const fmt = FORMATS[s.format];
    f.kind = (s.maxLength ?? Infinity) > LONG_TEXT && !fmt ? 'textarea' : 'text';
    f.inputType = fmt?.inputType ?? 'text';
    f.placeholder = fmt?.placeholder ?? (s.contentEncoding === 'base64' ? 'base64' : '');
    f.minLength = s.minLength;
    f.maxLength = s.maxLength;
    f.pattern = s.pattern;
  } else if (type === 'integer' || type === 'number') {
    f.kind = 'number';
    f.inputType = 'number';
    f.min = s.minimum ?? s.exclusiveMinimum;
    f.max = s.maximum ?? s.exclusiveMaximum;
    f.step = s.multipleOf ?? (type === 'integer' ? 1 : 'any');
  } else if (type === 'boolean') {
    f.kind = 'checkbox';
  } else if (type === 'array') {
    const items = resolve(s.items ?? {}, root);
    const itemType = schemaType(items);
    const itemValues = items.enum ?? ('const' in items ? [items.const] : undefined);
    if (itemValues && !items.anyOf && !items.oneOf) {
      f.kind = 'multi';
      f.options = itemValues.filter((v) => v !== null);
    } else if (['string', 'integer', 'number'].includes(itemType) && !items.anyOf && !items.oneOf) {
      f.kind = 'list';
      f.itemType = itemType;
    }
  }
  return f;
}

/** humanize turns "knowledgeItemIds" into "Knowledge item ids". */
export function humanize(name) {
  const words = String(name).replace(/[_-]+/g, ' ').replace(/([a-z0-9])([A-Z])/g, '$1 $2').trim().toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** describe lists a schema's constraints in words, e.g. ["1–100", "at most 32 items"]. */
export function describe(schema, root = schema) {
  const s = resolve(schema, root);
  const out = [];
  const range = (lo, hi, unit) => {
    if (lo !== undefined && hi !== undefined) return `${lo}–${hi}${unit}`;
    if (lo !== undefined) return `at least ${lo}${unit}`;
    return `at most ${hi}${unit}`;
  };
  if (s.minimum !== undefined || s.maximum !== undefined) out.push(range(s.minimum, s.maximum, ''));
  if (s.exclusiveMinimum !== undefined) out.push(`greater than ${s.exclusiveMinimum}`);
  if (s.exclusiveMaximum !== undefined) out.push(`less than ${s.exclusiveMaximum}`);
  if (s.multipleOf !== undefined) out.push(`multiple of ${s.multipleOf}`);
  if (s.minLength !== undefined || s.maxLength !== undefined) out.push(range(s.minLength, s.maxLength, ' characters'));
  if (s.pattern) out.push(`matches ${s.pattern}`);
  if (s.format) out.push(FORMATS[s.format]?.what ?? `format ${s.format}`);
  if (s.contentEncoding) out.push(`${s.contentEncoding}-encoded`);
  if (s.minItems !== undefined || s.maxItems !== undefined) out.push(range(s.minItems, s.maxItems, ' items'));
  if (s.uniqueItems) out.push('no duplicates');
  if (s.minProperties !== undefined || s.maxProperties !== undefined) out.push(range(s.minProperties, s.maxProperties, ' entries'));
  if (schemaType(s) === 'array' && s.items) {
    const inner = describe(s.items, root);
    if (inner.length) out.push(`each ${inner.join(', ')}`);
  }
  if (schemaType(s) === 'object' && s.required?.length) out.push(`requires ${s.required.join(', ')}`);
  return out;
}

/**
 * toControl returns the raw control value showing value in field f: a string
 * for text-like controls, a boolean for checkboxes, a string array for multi.
 * An undefined value shows the field's default.
 */
export function toControl(f, value) {
  const v = value === undefined ? f.default : value;
  switch (f.kind) {
    case 'checkbox':
      return v === true;
    case 'multi':
      return Array.isArray(v) ? v.map(String) : [];
    case 'select':
      return v === undefined || v === null ? '' : String(v);
    case 'list':
      return Array.isArray(v) ? v.join('\n') : '';
    case 'json':
      return v === undefined ? '' : JSON.stringify(v, null, 2);
    default:
      return v === undefined || v === null ? '' : String(v);
  }
}

/**
 * fromControl parses the raw control value of field f. It returns
 * { present, value, errors }: present is false when the field is left empty
 * (the argument is then omitted, so the server applies its default).
 */
export function fromControl(f, raw) {
  const s = f.schema;
  const done = (value) => ({ present: true, value, errors: validate(s, value, f.root ?? s) });
  switch (f.kind) {
    case 'checkbox': {
      // An unchecked box omits the argument unless that differs from the default.
      if (raw === true) return done(true);
      return f.default === true ? done(false) : { present: false, value: undefined, errors: [] };
    }
    case 'multi':
      return raw.length ? done(raw.map((r) => optionValue(f.options, r))) : absent(f);
    case 'select':
      return raw === '' ? absent(f) : done(optionValue(f.options, raw));
    case 'number': {
      const text = String(raw).trim();
      if (text === '') return absent(f);
      const n = Number(text);
      if (!Number.isFinite(n)) return { present: true, value: text, errors: ['must be a number'] };
      return done(n);
    }
    case 'list': {
      const text = String(raw);
      if (text.trim() === '') return absent(f);
      // One item per line; a single line may also be comma-separated.
      const parts = (text.includes('\n') ? text.split('\n') : text.split(',')).map((p) => p.trim()).filter((p) => p !== '');
      if (f.itemType === 'string') return done(parts);
      const nums = parts.map(Number);
      const bad = parts.filter((p, i) => !Number.isFinite(nums[i]));
      if (bad.length) return { present: true, value: parts, errors: [`not a number: ${bad.join(', ')}`] };
      return done(nums);
    }
    case 'json': {
      const text = String(raw).trim();
      if (text === '') return absent(f);
      let v;
      try {
        v = JSON.parse(text);
      } catch (e) {
        return { present: true, value: text, errors: [`invalid JSON: ${e.message}`] };
      }
      return done(v);
    }
    default: {
      const text = String(raw);
      if (text === '') return absent(f);
      return done(text);
    }
  }
}

function absent(f) {
  return { present: false, value: undefined, errors: f.required ? ['is required'] : [] };
}

function optionValue(options, raw) {
  return options.find((o) => String(o) === raw) ?? raw;
}

/**
 * collect parses every field of form from raws (name → raw control value)
 * and returns { args, errors } where errors maps a field name to messages.
 */
export function collect(form, raws) {
  const args = {};
  const errors = {};
  for (const f of form.fields) {
    const r = fromControl({ ...f, root: form.root }, raws[f.name] ?? toControl(f, undefined));
    if (r.errors.length) errors[f.name] = r.errors;
    if (r.present) args[f.name] = r.value;
  }
  return { args, errors };
}

/** prefill returns the raw control values showing params (e.g. a tool's first example). */
export function prefill(form, params = {}) {
  const raws = {};
  for (const f of form.fields) raws[f.name] = toControl(f, params?.[f.name]);
  return raws;
}

/**
 * validate checks value against schema s and returns messages naming the
 * problem, with a JSON-pointer-like path for nested values.
 */
export function validate(s, value, root = s, path = '') {
  if (s === true || s === undefined) return [];
  if (s === false) return [`${at(path)}is not allowed`];
  s = resolve(s, root);
  const errs = [];
  const where = at(path);
  const type = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (type.length && !type.some((t) => isType(t, value))) {
    return [`${where}must be ${type.map(article).join(' or ')}`];
  }
  if (value === null && nullable(s)) return [];
  if (s.enum && !s.enum.some((e) => deepEqual(e, value))) errs.push(`${where}must be one of ${s.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  if ('const' in s && !deepEqual(s.const, value)) errs.push(`${where}must be ${JSON.stringify(s.const)}`);
  if (typeof value === 'number') {
    if (s.minimum !== undefined && value < s.minimum) errs.push(`${where}must be at least ${s.minimum}`);
    if (s.maximum !== undefined && value > s.maximum) errs.push(`${where}must be at most ${s.maximum}`);
    if (s.exclusiveMinimum !== undefined && value <= s.exclusiveMinimum) errs.push(`${where}must be greater than ${s.exclusiveMinimum}`);
    if (s.exclusiveMaximum !== undefined && value >= s.exclusiveMaximum) errs.push(`${where}must be less than ${s.exclusiveMaximum}`);
    if (s.multipleOf && Math.abs(value / s.multipleOf - Math.round(value / s.multipleOf)) > 1e-9) errs.push(`${where}must be a multiple of ${s.multipleOf}`);
  }
  if (typeof value === 'string') {
    const len = [...value].length;
    if (s.minLength !== undefined && len < s.minLength) errs.push(s.minLength === 1 ? `${where}must not be empty` : `${where}must be at least ${s.minLength} characters`);
    if (s.maxLength !== undefined && len > s.maxLength) errs.push(`${where}must be at most ${s.maxLength} characters`);
    if (s.pattern && !safeRegExp(s.pattern)?.test(value)) errs.push(`${where}must match ${s.pattern}`);
    const fmt = FORMATS[s.format];
    if (fmt && !fmt.re.test(value)) errs.push(`${where}must be ${fmt.what}`);
  }
  if (Array.isArray(value)) {
    if (s.minItems !== undefined && value.length < s.minItems) errs.push(`${where}needs at least ${s.minItems} items`);
    if (s.maxItems !== undefined && value.length > s.maxItems) errs.push(`${where}allows at most ${s.maxItems} items`);
    if (s.uniqueItems) {
      const seen = new Set();
      for (const v of value) {
        const key = JSON.stringify(v);
        if (seen.has(key)) errs.push(`${where}has the duplicate ${key}`);
        seen.add(key);
      }
    }
    if (s.items !== undefined) value.forEach((v, i) => errs.push(...validate(s.items, v, root, `${path}/${i}`)));
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const keys = Object.keys(value);
    for (const r of s.required ?? []) if (!(r in value)) errs.push(`${at(`${path}/${r}`)}is required`);
    if (s.minProperties !== undefined && keys.length < s.minProperties) errs.push(`${where}needs at least ${s.minProperties} entries`);
    if (s.maxProperties !== undefined && keys.length > s.maxProperties) errs.push(`${where}allows at most ${s.maxProperties} entries`);
    for (const k of keys) {
      if (s.propertyNames !== undefined) errs.push(...validate(s.propertyNames, k, root, `${path}/${k}`).map((m) => `property name ${m}`));
      if (s.properties && k in s.properties) errs.push(...validate(s.properties[k], value[k], root, `${path}/${k}`));
      else if (s.additionalProperties === false) errs.push(`${at(`${path}/${k}`)}is not a known property`);
      else if (s.additionalProperties && typeof s.additionalProperties === 'object') errs.push(...validate(s.additionalProperties, value[k], root, `${path}/${k}`));
    }
  }
  if (s.allOf) for (const sub of s.allOf) errs.push(...validate(sub, value, root, path));
  if (s.anyOf && !s.anyOf.some((sub) => validate(sub, value, root, path).length === 0)) errs.push(`${where}matches none of the allowed shapes`);
  if (s.oneOf && s.oneOf.filter((sub) => validate(sub, value, root, path).length === 0).length !== 1) errs.push(`${where}must match exactly one of the allowed shapes`);
  if (s.not && validate(s.not, value, root, path).length === 0) errs.push(`${where}matches a forbidden shape`);
  return errs;
}

const at = (path) => (path ? `${path.slice(1)}: ` : '');

function article(t) {
  return { object: 'an object', array: 'an array', integer: 'an integer', null: 'null' }[t] ?? `a ${t}`;
}

function isType(t, v) {
  switch (t) {
    case 'null': return v === null;
    case 'boolean': return typeof v === 'boolean';
    case 'string': return typeof v === 'string';
    case 'number': return typeof v === 'number' && Number.isFinite(v);
    case 'integer': return Number.isInteger(v);
    case 'array': return Array.isArray(v);
    case 'object': return v !== null && typeof v === 'object' && !Array.isArray(v);
    default: return true;
  }
}

const regexCache = new Map();
function safeRegExp(pattern) {
  if (!regexCache.has(pattern)) {
    let re = null;
    try {
      re = new RegExp(pattern, 'u');
    } catch {
      re = null; // Leave patterns JavaScript cannot compile to the server.
    }
    regexCache.set(pattern, re);
  }
  return regexCache.get(pattern) ?? { test: () => true };
}

/** deepEqual compares JSON values. */
export function deepEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => deepEqual(a[k], b[k]));
}

/**
 * fieldOf maps a server field-violation path ("tags[0]", "page.limit",
 * "source_type") to the top-level form field it belongs to, or "" when none.
 */
export function fieldOf(form, path) {
  const head = String(path ?? '').split(/[.[/]/)[0];
  const camel = head.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
  return form.fields.find((f) => f.name === head || f.name === camel)?.name ?? '';
}
