// form.js renders the model from schemaform.js as accessible controls: a
// label per control, required marks, constraints and descriptions as help
// text tied with aria-describedby, and errors shown next to their field.

import { h, replace } from './dom.js';
import { toControl } from './schemaform.js';

let uid = 0;

/**
 * ToolForm holds the controls of one tool's form. Build it with the form
 * model, read it with raws(), fill it with fill(raws), and show problems
 * with showErrors({field: [messages]}).
 */
export class ToolForm {
  constructor(model) {
    this.model = model;
    this.controls = new Map(); // name → { field, read, write, errorEl, input }
    this.prefix = `f${++uid}`;
    this.el = h('div', { class: 'fields' }, model.fields.map((f) => this.#field(f)));
    if (!model.fields.length) this.el.append(h('p', { class: 'muted', text: 'This tool takes no arguments.' }));
  }

  #field(f) {
    const id = `${this.prefix}-${f.name}`;
    const helpId = `${id}-help`;
    const errId = `${id}-err`;
    const rules = [...f.constraints];
    if (f.default !== undefined) rules.push(`default ${JSON.stringify(f.default)}`);
    if (f.kind === 'list') rules.push('one per line or comma-separated');
    if (f.kind === 'json') rules.push(`JSON ${schemaKind(f.schema)}`);
    const helpEl = f.help || rules.length
      ? h('p', { class: 'help', id: helpId },
        f.help ? h('span', { class: 'help-text', text: f.help }) : null,
        rules.length ? h('span', { class: 'help-rules', text: rules.join(' · ') }) : null)
      : null;
    const errorEl = h('p', { class: 'field-error', id: errId, hidden: true, 'aria-live': 'polite' });
    const describedBy = [helpEl ? helpId : '', errId].filter(Boolean).join(' ');
    const labelText = [f.label, f.required ? h('span', { class: 'req', 'aria-hidden': 'true', text: ' *' }) : null,
      f.required ? h('span', { class: 'visually-hidden', text: ' (required)' }) : null];
    const name = h('code', { class: 'field-name', text: f.name });
    let control;
    let input;
    let read;
    let write;

    switch (f.kind) {
      case 'checkbox': {
        input = h('input', { type: 'checkbox', id, 'aria-describedby': describedBy, dataset: { field: f.name } });
        read = () => input.checked;
        write = (v) => { input.checked = v === true; };
        control = h('div', { class: 'field field-check' },
          h('div', { class: 'check-row' }, input, h('label', { for: id }, labelText), name), helpEl, errorEl);
        break;
      }
      case 'multi': {
        const boxes = f.options.map((o, i) => h('input', { type: 'checkbox', id: `${id}-${i}`, value: String(o), dataset: { field: f.name } }));
        input = boxes[0];
        read = () => boxes.filter((b) => b.checked).map((b) => b.value);
        write = (v) => { for (const b of boxes) b.checked = v.includes(b.value); };
        control = h('fieldset', { class: 'field field-multi', 'aria-describedby': describedBy },
          h('legend', {}, labelText, ' ', name),
          h('div', { class: 'options' }, boxes.map((b, i) => h('label', { class: 'option', for: b.id }, b, String(f.options[i])))),
          helpEl, errorEl);
        break;
      }
      case 'select': {
        const empty = f.required && f.default === undefined ? 'Choose…' : `(not set${f.default !== undefined ? `: ${f.default}` : ''})`;
        input = h('select', { id, 'aria-describedby': describedBy, 'aria-required': f.required ? 'true' : undefined, dataset: { field: f.name } },
          h('option', { value: '', text: empty }),
          f.options.map((o) => h('option', { value: String(o), text: String(o) })));
        read = () => input.value;
        write = (v) => { input.value = v; };
        break;
      }
      case 'number':
        input = h('input', {
          type: 'number', id, inputmode: f.step === 1 ? 'numeric' : 'decimal', min: f.min, max: f.max, step: f.step,
          placeholder: f.default !== undefined ? String(f.default) : '', 'aria-describedby': describedBy,
          'aria-required': f.required ? 'true' : undefined, dataset: { field: f.name },
        });
        break;
      case 'text':
        input = h('input', {
          type: f.inputType, id, maxlength: f.maxLength, placeholder: f.placeholder || (f.default !== undefined ? String(f.default) : ''),
          autocomplete: 'off', spellcheck: 'false', 'aria-describedby': describedBy, 'aria-required': f.required ? 'true' : undefined, dataset: { field: f.name },
        });
        break;
      default: // textarea, list, json
        input = h('textarea', {
          id, rows: f.kind === 'json' ? '5' : f.kind === 'list' ? '2' : '4', class: f.kind === 'json' ? 'mono' : '',
          maxlength: f.kind === 'textarea' ? f.maxLength : undefined, spellcheck: f.kind === 'json' ? 'false' : undefined,
          'aria-describedby': describedBy, 'aria-required': f.required ? 'true' : undefined, dataset: { field: f.name },
        });
    }
    if (!control) {
      read = () => input.value;
      write = (v) => { input.value = v; };
      const wide = f.kind === 'json' || f.kind === 'textarea';
      control = h('div', { class: wide ? 'field field-wide' : 'field' }, h('label', { for: id }, labelText, ' ', name), input, helpEl, errorEl);
    }
    this.controls.set(f.name, { field: f, read, write, errorEl, input, control });
    return control;
  }

  /** raws returns the raw value of every control, by field name. */
  raws() {
    return Object.fromEntries([...this.controls].map(([name, c]) => [name, c.read()]));
  }

  /** fill sets the controls from raw values (see schemaform.prefill). */
  fill(raws) {
    for (const [name, c] of this.controls) c.write(raws[name] ?? toControl(c.field, undefined));
    this.showErrors({});
  }

  /**
   * showErrors shows messages next to their fields (clearing the others) and
   * returns the first control with an error, for focus.
   */
  showErrors(errors) {
    let first = null;
    for (const [name, c] of this.controls) {
      const msgs = errors[name] ?? [];
      replace(c.errorEl, msgs.join('; '));
      c.errorEl.hidden = msgs.length === 0;
      c.control.classList.toggle('invalid', msgs.length > 0);
      c.input?.setAttribute('aria-invalid', msgs.length ? 'true' : 'false');
      if (msgs.length && !first) first = c.input;
    }
    return first;
  }
}

function schemaKind(s) {
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  if (t === 'array') return 'array';
  if (t === 'object') return 'object';
  return 'value';
}
