// ESLint's max-lines-per-function (blank and comment lines not counted), with the functions that
// are still longer listed by name in long-functions.json, each with the reason it is. An entry that
// no longer names a long function is reported too, so the list only shrinks.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { URL } from 'node:url';
import { builtinRules } from 'eslint/use-at-your-own-risk';

const base = builtinRules.get('max-lines-per-function');
const listFile = new URL('./long-functions.json', import.meta.url);
const allowed = JSON.parse(readFileSync(listFile, 'utf8')).functions;

/** The function's name as a reader finds it: its own, its variable's, its key's, or the enclosing one's. */
function nameOf(node) {
  const fn = node.type === 'MethodDefinition' || node.type === 'Property' ? node.value : node;
  if (fn.id?.name) return fn.id.name;
  const parent = node.type === fn.type ? fn.parent : node.parent;
  if (parent?.type === 'VariableDeclarator' && parent.id.type === 'Identifier') return parent.id.name;
  if (node.key?.type === 'Identifier') return node.key.name;
  if ((parent?.type === 'Property' || parent?.type === 'PropertyDefinition') && parent.key.type === 'Identifier')
    return parent.key.name;
  for (let up = parent; up; up = up.parent) {
    if (/Function|MethodDefinition/.test(up.type)) return `${nameOf(up)} (inner)`;
  }
  return '(anonymous)';
}

export default {
  meta: {
    ...base.meta,
    docs: { description: 'Functions of at most the set lines, but for those listed with a reason' },
    messages: {
      ...base.meta.messages,
      stale: '{{name}} is listed in lint/long-functions.json but is no longer a long function here: remove its entry',
    },
  },
  create(context) {
    const file = path.relative(process.cwd(), context.filename).split(path.sep).join('/');
    const listed = new Map(allowed.filter((entry) => entry.file === file).map((entry) => [entry.function, entry]));
    const seen = new Set();
    const filtered = Object.create(context, {
      report: {
        value(descriptor) {
          const name = nameOf(descriptor.node);
          if (listed.has(name)) seen.add(name);
          else
            context.report({ ...descriptor, data: { ...descriptor.data, name: `${descriptor.data.name} (${name})` } });
        },
      },
    });
    const visitors = base.create(filtered);
    return {
      ...visitors,
      'Program:exit'(node) {
        visitors['Program:exit']?.(node);
        for (const name of listed.keys()) {
          if (!seen.has(name)) context.report({ node, messageId: 'stale', data: { name } });
        }
      },
    };
  },
};
