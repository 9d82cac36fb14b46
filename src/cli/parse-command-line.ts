// The one command-line parser every command uses: node's parseArgs, with the mistakes people make
// (a typo'd flag, a flag without its value, a value on a switch, a stray argument) reported as a
// usage error that says what was meant, instead of parseArgs' raw ERR_PARSE_ARGS_* text.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './cli-io.js';
import { closestName } from '../core/did-you-mean.js';

type Token =
  | { kind: 'option'; name: string; rawName: string; value: string | undefined; inlineValue: boolean | undefined }
  | { kind: 'positional'; value: string }
  | { kind: 'option-terminator' };

/** What parseArgs counts as a value that looks like another flag (it refuses those in strict mode). */
function looksLikeFlag(value: string): boolean {
  return value.length > 1 && value.startsWith('-');
}

function flagName(name: string): string {
  return name.length === 1 ? `-${name}` : `--${name}`;
}

/** The first mistake on the command line, as a message a person can act on; undefined when none. */
function firstMistake(command: string, config: ParseArgsConfig): string | undefined {
  const options = config.options ?? {};
  // Lenient parse for its tokens only: it never throws, so every mistake can be named precisely.
  const { tokens } = parseArgs({
    args: config.args ?? [],
    options,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  for (const token of tokens as Token[]) {
    if (token.kind === 'positional' && !config.allowPositionals) {
      return `unexpected argument "${token.value}": clusterstack ${command} takes only flags`;
    }
    if (token.kind !== 'option') continue;
    const option = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (!option) {
      const suggestion = closestName(token.name, Object.keys(options));
      return `unknown flag ${token.rawName}${suggestion ? `; did you mean ${flagName(suggestion)}?` : ` for clusterstack ${command}`}`;
    }
    if (option.type === 'string' && token.value === undefined) {
      return `flag ${token.rawName} needs a value, e.g. ${token.rawName} <value>`;
    }
    if (option.type === 'string' && !token.inlineValue && token.value !== undefined && looksLikeFlag(token.value)) {
      return `flag ${token.rawName} needs a value but is followed by ${token.value}; write ${token.rawName}=${token.value} if that is the value`;
    }
    if (option.type === 'boolean' && token.inlineValue) {
      return `flag ${token.rawName} is a switch and takes no value (not "${token.value}"); give ${token.rawName} alone to turn it on`;
    }
  }
  return undefined;
}

/**
 * parseArgs for `clusterstack <command>`, strict, with the same typed result; any mistake on the
 * command line is thrown as a UsageError naming the flag (and the flag probably meant), exit 2.
 */
export function parseCommandLine<T extends ParseArgsConfig>(
  command: string,
  config: T,
): ReturnType<typeof parseArgs<T>> {
  const mistake = firstMistake(command, config);
  if (mistake) throw new UsageError(mistake);
  try {
    return parseArgs(config);
  } catch (error) {
    // Anything the check above did not foresee is still a usage error, in parseArgs' own words.
    if ((error as { code?: unknown }).code?.toString().startsWith('ERR_PARSE_ARGS'))
      throw new UsageError((error as Error).message);
    throw error;
  }
}
