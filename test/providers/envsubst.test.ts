import { describe, expect, it } from 'vitest';
import { substituteVariables, SubstitutionSyntaxError } from '../../src/providers/envsubst.js';

const values = (entries: Record<string, string>) => (name: string) => entries[name];

describe('substituteVariables', () => {
  it('replaces ${VAR} and $VAR with their values', () => {
    const result = substituteVariables('host: ${HOST}\nport: $PORT\n', values({ HOST: 'example.org', PORT: '6443' }));
    expect(result).toEqual({ text: 'host: example.org\nport: 6443\n', missing: [], variables: ['HOST', 'PORT'] });
  });

  it('takes the default of ${VAR:=d}, ${VAR:-d}, ${VAR=d} and ${VAR-d} when the value is absent or empty', () => {
    const result = substituteVariables(
      '${A:=one} ${B:-two} ${C=three} ${D-four} ${E:=five}',
      values({ C: '', E: 'given' }),
    );
    expect(result.text).toBe('one two three four given');
    expect(result.missing).toEqual([]);
  });

  it('turns $$ into a literal $ and leaves other dollars alone', () => {
    expect(substituteVariables('price: $$5, $(shell), $', values({})).text).toBe('price: $5, $(shell), $');
  });

  it('reports every variable without value or default instead of substituting an empty string', () => {
    const result = substituteVariables('${A} ${B:=x} ${C} ${A}', values({}));
    expect(result.missing).toEqual(['A', 'C']);
  });

  it('substitutes variables inside defaults, and needs them only when the default is used', () => {
    expect(substituteVariables('${A:=${B}}', values({ B: 'b' })).text).toBe('b');
    expect(substituteVariables('${A:=${B}}', values({ A: 'a' }))).toMatchObject({ text: 'a', missing: [] });
    expect(substituteVariables('${A:=${B}}', values({})).missing).toEqual(['B']);
  });

  it('refuses an unclosed reference and operators clusterctl templates do not use, with the line', () => {
    expect(() => substituteVariables('a: 1\nb: ${OPEN', values({}))).toThrow(SubstitutionSyntaxError);
    expect(() => substituteVariables('a: 1\nb: ${OPEN', values({}))).toThrow(/line 2/);
    expect(() => substituteVariables('${NAME^^}', values({ NAME: 'x' }))).toThrow(/only \$\{NAME\}/);
  });
});
