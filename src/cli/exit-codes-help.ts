// The exit codes section every help text ends with, written from the one table in core/failure.ts
// so the help, the README and the codes the CLI returns cannot drift apart.
import { EXIT_CODES } from '../core/failure.js';

/** "Exit codes:" and one line per code, as `clusterstack --help` and every command's help print it. */
export function exitCodesHelp(): string {
  return `Exit codes:\n${EXIT_CODES.map(({ code, meaning }) => `  ${code}  ${meaning}`).join('\n')}`;
}
