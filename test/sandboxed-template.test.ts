// Handlebars for READMEs, commit messages and pull request bodies: our helpers only, no prototype
// access, strict when asked; a template is compiled once per process and kept, by source and strictness.
import { describe, expect, it } from 'vitest';
import { compileTemplate, TemplateError } from '../src/render/sandboxed-template.js';

describe('compileTemplate', () => {
  it('renders with our helpers, and gives the same text from a template compiled again', () => {
    const source = '{{plural (length items) "item" "items"}}: {{join items ", "}}{{#if (eq mode "x")}} (x){{/if}}';
    const first = compileTemplate(source, 'list')({ items: ['a', 'b'], mode: 'x' });
    expect(first).toBe('items: a, b (x)');
    expect(compileTemplate(source, 'list')({ items: ['a', 'b'], mode: 'x' })).toBe(first);
  });

  it('keeps strict and lenient compilations of one source apart', () => {
    const source = 'title: {{title}}';
    expect(compileTemplate(source, 'lenient')({})).toBe('title: ');
    expect(() => compileTemplate(source, 'strict one', { strict: true })({})).toThrow(TemplateError);
    expect(compileTemplate(source, 'lenient again')({})).toBe('title: ');
  });

  it('names the template in every error, also when its compilation is reused', () => {
    const broken = '{{#if open}}never closed';
    for (const name of ['readme template', 'commit template']) {
      const error = (() => {
        try {
          compileTemplate(broken, name)({ open: true });
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(TemplateError);
      expect((error as TemplateError).message).toMatch(new RegExp(`^template ${name}: `));
    }
  });

  it('reads no prototype properties and knows no lookup or log helper', () => {
    expect(compileTemplate('[{{constructor}}][{{__proto__}}]', 'proto')({})).toBe('[][]');
    expect(() => compileTemplate('{{lookup a "b"}}', 'lookup')({ a: { b: 1 } })).toThrow(TemplateError);
    expect(() => compileTemplate('{{log "x"}}', 'log')({})).toThrow(TemplateError);
  });
});
