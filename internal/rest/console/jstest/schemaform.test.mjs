// Unit tests of the pure form generator (run by `node --test`, from
// TestSchemaFormJS in console_test.go). With TOOLSVC_TOOLS set to a JSON file
// of real ToolDefinitions, it also checks every real tool's input schema.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import {
  HANDLED_KEYWORDS, buildForm, collect, describe as describeSchema, fieldOf, fromControl, humanize,
  prefill, resolve, toControl, unhandledKeywords, validate,
} from '../static/schemaform.js';

const schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  additionalProperties: false,
  required: ['content'],
  properties: {
    layer: { type: 'string', enum: ['agent', 'user'], default: 'user', description: 'Memory scope.' },
    content: { type: 'string', minLength: 1, maxLength: 16384 },
    query: { type: 'string', maxLength: 100, pattern: '^[a-z ]+$' },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
    threshold: { type: 'number', minimum: 0, maximum: 1 },
    force: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 8 }, maxItems: 3, uniqueItems: true },
    layers: { type: 'array', items: { type: 'string', enum: ['user', 'project'] }, uniqueItems: true },
    sizes: { type: 'array', items: { type: 'integer' } },
    files: { type: 'array', items: { type: 'object', required: ['path'], additionalProperties: false, properties: { path: { type: 'string', minLength: 1 } } } },
    metadata: { type: 'object', additionalProperties: true },
    when: { type: 'string', format: 'date-time' },
    ref: { $ref: '#/$defs/Ref' },
    choice: { oneOf: [{ type: 'string' }, { type: 'integer' }] },
  },
  $defs: { Ref: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } },
};

const form = buildForm(schema);
const field = (name) => form.fields.find((f) => f.name === name);

describe('buildForm', () => {
  const cases = [
    { name: 'enum string is a select with its default', field: 'layer', want: { kind: 'select', options: ['agent', 'user'], default: 'user', help: 'Memory scope.' } },
    { name: 'long string is a required textarea', field: 'content', want: { kind: 'textarea', required: true, minLength: 1, maxLength: 16384 } },
    { name: 'short string is a text input with its pattern', field: 'query', want: { kind: 'text', inputType: 'text', pattern: '^[a-z ]+$' } },
    { name: 'integer has min, max and step 1', field: 'limit', want: { kind: 'number', min: 1, max: 100, step: 1 } },
    { name: 'number steps freely', field: 'threshold', want: { kind: 'number', step: 'any' } },
    { name: 'boolean is a checkbox', field: 'force', want: { kind: 'checkbox' } },
    { name: 'array of strings is a list', field: 'tags', want: { kind: 'list', itemType: 'string' } },
    { name: 'array of enum strings is a checkbox group', field: 'layers', want: { kind: 'multi', options: ['user', 'project'] } },
    { name: 'array of integers is a list', field: 'sizes', want: { kind: 'list', itemType: 'integer' } },
    { name: 'array of objects is JSON', field: 'files', want: { kind: 'json' } },
    { name: 'object is JSON', field: 'metadata', want: { kind: 'json' } },
    { name: 'date-time has a placeholder', field: 'when', want: { kind: 'text', placeholder: '2025-01-31T12:00:00Z' } },
    { name: '$ref is resolved', field: 'ref', want: { kind: 'json' } },
    { name: 'oneOf is JSON', field: 'choice', want: { kind: 'json' } },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const f = field(c.field);
      assert.ok(f, `no field ${c.field}`);
      for (const [k, v] of Object.entries(c.want)) assert.deepEqual(f[k], v, `${c.field}.${k}`);
    });
  }
  test('required fields come first', () => assert.equal(form.fields[0].name, 'content'));
  test('labels are humanized', () => assert.equal(humanize('knowledgeItemIds'), 'Knowledge item ids'));
  test('constraints are described', () => {
    assert.deepEqual(describeSchema(schema.properties.limit), ['1–100']);
    assert.deepEqual(describeSchema(schema.properties.tags), ['at most 3 items', 'no duplicates', 'each 1–8 characters']);
  });
});

describe('fromControl', () => {
  const cases = [
    { name: 'empty optional select is omitted', field: 'layer', raw: '', want: { present: false, errors: [] } },
    { name: 'empty required text is an error', field: 'content', raw: '', want: { present: false, errors: ['is required'] } },
    { name: 'number parses', field: 'limit', raw: '5', want: { present: true, value: 5, errors: [] } },
    { name: 'number over maximum', field: 'limit', raw: '500', want: { present: true, value: 500, errors: ['must be at most 100'] } },
    { name: 'integer rejects fractions', field: 'limit', raw: '2.5', want: { present: true, value: 2.5, errors: ['must be an integer'] } },
    { name: 'not a number', field: 'threshold', raw: 'abc', want: { present: true, value: 'abc', errors: ['must be a number'] } },
    { name: 'pattern mismatch', field: 'query', raw: 'ABC', want: { present: true, value: 'ABC', errors: ['must match ^[a-z ]+$'] } },
    { name: 'list splits on commas', field: 'tags', raw: 'a, b,c', want: { present: true, value: ['a', 'b', 'c'], errors: [] } },
    { name: 'list splits on lines, keeping commas', field: 'tags', raw: 'a,b\nc', want: { present: true, value: ['a,b', 'c'], errors: [] } },
    { name: 'list duplicates and length', field: 'tags', raw: 'a,a,toolongvalue', want: { present: true, value: ['a', 'a', 'toolongvalue'], errors: ['has the duplicate "a"', '2: must be at most 8 characters'] } },
    { name: 'integer list', field: 'sizes', raw: '1, 2', want: { present: true, value: [1, 2], errors: [] } },
    { name: 'integer list rejects words', field: 'sizes', raw: '1, x', want: { present: true, value: ['1', 'x'], errors: ['not a number: x'] } },
    { name: 'checked box is true', field: 'force', raw: true, want: { present: true, value: true, errors: [] } },
    { name: 'unchecked box is omitted', field: 'force', raw: false, want: { present: false, errors: [] } },
    { name: 'multi keeps the checked options', field: 'layers', raw: ['user'], want: { present: true, value: ['user'], errors: [] } },
    { name: 'JSON array of objects', field: 'files', raw: '[{"path":"a.go"}]', want: { present: true, value: [{ path: 'a.go' }], errors: [] } },
    { name: 'JSON missing required and unknown property', field: 'files', raw: '[{"x":1}]', want: { present: true, value: [{ x: 1 }], errors: ['0/path: is required', '0/x: is not a known property'] } },
    { name: 'malformed JSON', field: 'metadata', raw: '{', wantError: /^invalid JSON/ },
    { name: 'JSON of the wrong type', field: 'metadata', raw: '[1]', want: { present: true, value: [1], errors: ['must be an object'] } },
    { name: 'date-time checked', field: 'when', raw: 'yesterday', want: { present: true, value: 'yesterday', errors: ['must be an RFC 3339 date-time'] } },
    { name: 'date-time accepted', field: 'when', raw: '2025-01-31T12:00:00Z', want: { present: true, value: '2025-01-31T12:00:00Z', errors: [] } },
    { name: 'oneOf matches exactly one', field: 'choice', raw: '"x"', want: { present: true, value: 'x', errors: [] } },
    { name: 'oneOf matches none', field: 'choice', raw: 'true', want: { present: true, value: true, errors: ['must match exactly one of the allowed shapes'] } },
    { name: '$ref required', field: 'ref', raw: '{}', want: { present: true, value: {}, errors: ['id: is required'] } },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const got = fromControl({ ...field(c.field), root: form.root }, c.raw);
      if (c.wantError) {
        assert.match(got.errors[0] ?? '', c.wantError);
        return;
      }
      assert.deepEqual({ present: got.present, value: got.value, errors: got.errors }, { value: undefined, ...c.want });
    });
  }
});

describe('prefill and collect', () => {
  test('an example round-trips through the controls', () => {
    const params = { content: 'hello', layer: 'agent', limit: 3, force: true, tags: ['a', 'b'], layers: ['project'], files: [{ path: 'x' }], metadata: { k: 'v' } };
    const raws = prefill(form, params);
    assert.equal(raws.tags, 'a\nb');
    assert.equal(raws.limit, '3');
    const { args, errors } = collect(form, raws);
    assert.deepEqual(errors, {});
    assert.deepEqual(args, params);
  });
  test('defaults are shown and sent', () => {
    const raws = prefill(form, {});
    assert.equal(raws.layer, 'user');
    assert.equal(raws.limit, '10');
    assert.deepEqual(collect(form, raws), { args: { layer: 'user', limit: 10 }, errors: { content: ['is required'] } });
  });
  test('toControl shows nothing for an unset optional field', () => assert.equal(toControl(field('query'), undefined), ''));
});

describe('validate and helpers', () => {
  const cases = [
    { name: 'nullable type accepts null', schema: { type: ['string', 'null'] }, value: null, want: [] },
    { name: 'const', schema: { const: 'a' }, value: 'b', want: ['must be "a"'] },
    { name: 'exclusive bounds', schema: { exclusiveMinimum: 0, exclusiveMaximum: 1 }, value: 1, want: ['must be less than 1'] },
    { name: 'multipleOf', schema: { multipleOf: 5 }, value: 12, want: ['must be a multiple of 5'] },
    { name: 'property names and counts', schema: { type: 'object', propertyNames: { minLength: 2 }, maxProperties: 1 }, value: { a: 1, bb: 2 }, want: ['allows at most 1 entries', 'property name a: must be at least 2 characters'] },
    { name: 'additionalProperties schema', schema: { type: 'object', additionalProperties: { type: 'integer' } }, value: { a: 'x' }, want: ['a: must be an integer'] },
    { name: 'allOf and not', schema: { allOf: [{ minLength: 2 }], not: { const: 'no' } }, value: 'no', want: ['matches a forbidden shape'] },
    { name: 'minItems', schema: { type: 'array', minItems: 2 }, value: [1], want: ['needs at least 2 items'] },
    { name: 'false schema', schema: false, value: 1, want: ['is not allowed'] },
  ];
  for (const c of cases) test(c.name, () => assert.deepEqual(validate(c.schema, c.value), c.want));

  test('resolve follows local refs', () => assert.deepEqual(resolve({ $ref: '#/$defs/Ref' }, schema), schema.$defs.Ref));
  test('fieldOf maps server paths to fields', () => {
    for (const [path, want] of [['tags[0]', 'tags'], ['files.0.path', 'files'], ['content', 'content'], ['nope', '']]) assert.equal(fieldOf(form, path), want, path);
    const snake = buildForm({ type: 'object', properties: { sourceType: { type: 'string' } } });
    assert.equal(fieldOf(snake, 'source_type'), 'sourceType');
  });
  test('unhandled keywords are reported with their path', () => {
    assert.deepEqual(unhandledKeywords(schema), []);
    assert.deepEqual(unhandledKeywords({ properties: { a: { if: {}, type: 'string' } }, patternProperties: {} }), ['/properties/a: if', '/: patternProperties']);
    assert.ok(HANDLED_KEYWORDS.includes('additionalProperties'));
  });
});

// The real tools, dumped by the Go test from the running registry.
const toolsFile = process.env.TOOLSVC_TOOLS;
describe('real tool schemas', { skip: toolsFile ? false : 'TOOLSVC_TOOLS is not set (the Go test sets it)' }, () => {
  const tools = toolsFile ? JSON.parse(readFileSync(toolsFile, 'utf8')) : [];
  test('there are tools', () => assert.ok(tools.length > 0));
  for (const t of tools) {
    describe(t.name, () => {
      test('every keyword of the input schema is handled', () => assert.deepEqual(unhandledKeywords(t.inputSchema), []));
      const f = buildForm(t.inputSchema);
      test('every property has a field', () => assert.deepEqual(f.fields.map((x) => x.name).sort(), Object.keys(t.inputSchema.properties ?? {}).sort()));
      test('every required property is marked', () => {
        for (const r of t.inputSchema.required ?? []) assert.equal(f.fields.find((x) => x.name === r)?.required, true, r);
      });
      test('scalar properties get a typed control', () => {
        for (const x of f.fields) {
          const type = x.schema.type;
          if (['string', 'integer', 'number', 'boolean'].includes(type) && !x.schema.anyOf && !x.schema.oneOf) assert.notEqual(x.kind, 'json', `${x.name} (${type})`);
        }
      });
      (t.examples ?? []).forEach((ex, i) => {
        if (ex.expectedErrorCode) return;
        test(`example ${i + 1} prefills and round-trips without errors`, () => {
          const { args, errors } = collect(f, prefill(f, ex.params));
          assert.deepEqual(errors, {});
          // Defaults the example leaves out are sent explicitly; everything it sets comes back unchanged.
          for (const [k, v] of Object.entries(ex.params ?? {})) assert.deepEqual(args[k], v, k);
        });
      });
    });
  }
});
