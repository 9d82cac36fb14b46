// Which CEL library a verdict was made with: remembered CEL verdicts (cel-syntax-memo.ts,
// crd-rule-verdicts.ts) are kept only for the library file they were made with.
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';

/** The CEL library this process would load, named by its entry file's stat (resolved, never loaded). */
export function celLibraryIdentity(): string {
  const file = createRequire(import.meta.url).resolve('@marcbachmann/cel-js');
  const info = statSync(file);
  return `${file} ${info.size} ${info.mtimeMs} ${info.ino}`;
}
