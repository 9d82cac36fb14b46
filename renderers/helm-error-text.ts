// Helm 3 and helm 4 word the same template failures differently; the values-template evaluator
// (values-template.ts) reads them in helm 3's words, so helm 4's are put into those first.
//
// - An execution error: helm 3 prints text/template's one line, `template: <file>:<line>:<col>:
//   executing "<name>" at <<action>>: <message>`, chains of includes continuing on the same line.
//   Helm 4 (pkg/engine reformatExecErrorMsg) prints one block per link of the chain: the location,
//   `  executing "<name>" at <<action>>:` and `    <message>` on lines of their own, a link
//   without location (`template: no template ...`) as one unindented line.
// - Lint mode's `required` and `fail`: helm 3 logs `[INFO] Missing required value: <message>` and
//   `[INFO] Fail: <message>`; helm 4 logs through slog, `level=WARN msg="missing required value"
//   message=<message>` and `level=INFO msg="funcMap fail" message=<message>`, the message quoted
//   as Go quotes strings when it holds spaces or quotes.

const LOCATION = /^(.*?)((?:[\w.-]+\/)*[\w.-]+:\d+(?::\d+)?)$/;
const EXECUTING = '  executing "';
/** Lines that start something else: a lint section or finding, helm's own error line, a log line. */
const OTHER = /^(\[|==> |Error: |Use --debug|level=)/;

/** `text` with every helm 4 execution-error block joined into helm 3's one line; helm 3's text is returned as it is. */
export function helm3ExecErrors(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const head = LOCATION.exec(lines[i]!);
    if (!head || !lines[i + 1]?.startsWith(EXECUTING)) {
      out.push(lines[i]!);
      continue;
    }
    const link = (at: number, location: string): { text: string; next: number } => {
      const message = lines[at + 2]?.startsWith('    ') ? ` ${lines[at + 2]!.trim()}` : '';
      return { text: `template: ${location}: ${lines[at + 1]!.trim()}${message}`, next: at + (message ? 2 : 1) };
    };
    let { text: joined, next: last } = link(i, head[2]!);
    for (;;) {
      const following = lines[last + 1];
      if (following === undefined || following === '' || OTHER.test(following) || following.startsWith(' ')) break;
      const location = LOCATION.exec(following);
      if (location && location[1] === '' && lines[last + 2]?.startsWith(EXECUTING)) {
        const more = link(last + 1, location[2]!);
        joined += ` ${more.text}`;
        last = more.next;
      } else {
        joined += ` ${following.trim()}`;
        last += 1;
      }
    }
    out.push(`${head[1]}${joined}`);
    i = last;
  }
  return out.join('\n');
}

/** What a lint-mode `required` or `fail` logged on this line (helm 3 or 4), or undefined. */
export function lintLogMessage(line: string): { kind: 'required' | 'fail'; message: string } | undefined {
  const helm3 = /\[INFO\] (Missing required value|Fail): (.*)$/.exec(line);
  if (helm3) return { kind: helm3[1] === 'Fail' ? 'fail' : 'required', message: helm3[2]! };
  const helm4 = /^level=\w+ msg="(missing required value|funcMap fail)" message=("(?:[^"\\]|\\.)*"|\S*)$/.exec(line);
  if (!helm4) return undefined;
  return { kind: helm4[1] === 'funcMap fail' ? 'fail' : 'required', message: unquote(helm4[2]!) };
}

/** A Go-quoted string's value (JSON reads Go's escapes for printable text); a bare word as it is. */
function unquote(value: string): string {
  if (!value.startsWith('"')) return value;
  try {
    return JSON.parse(value) as string;
  } catch {
    return value.slice(1, -1);
  }
}
