// Where a field is in a YAML document's text, for messages: `clusters.yaml:14` rather than the
// line the object starts on. Read from the text's layout (block mappings and sequences by their
// indentation), only when a problem is reported; a field inside a flow collection (`{...}`, JSON)
// is placed on the line its collection starts on.

/** A field path as problems name it: `spec.topology.classRef.name`, `spec.versions[1]`, `metadata.annotations[a.b/c]`. */
function pathSegments(path: string): (string | number)[] {
  const segments: (string | number)[] = [];
  const pattern = /([^.[\]]+)|\[([^\]]*)\]/g;
  for (let match = pattern.exec(path); match; match = pattern.exec(path)) {
    if (match[1] !== undefined) segments.push(match[1]);
    else segments.push(/^\d+$/.test(match[2]!) ? Number(match[2]) : match[2]!);
  }
  return segments;
}

const indentOf = (line: string): number => line.length - line.trimStart().length;
const isContent = (line: string): boolean => line.trim() !== '' && !line.trimStart().startsWith('#');
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The 1-based line (within `text`) of the field `path`, or of its deepest ancestor written there
 * when the field itself is not (a missing field is reported at its parent); undefined when not
 * even the first segment is found.
 */
export function fieldLine(text: string, path: string): number | undefined {
  const lines = text.split('\n');
  let start = 0;
  let end = lines.length;
  let parentIndent = -1;
  let found: number | undefined;
  for (const segment of pathSegments(path)) {
    // The block below the parent: its first content line sets the children's indentation.
    const first = lines.slice(start, end).findIndex((line) => isContent(line) && indentOf(line) > parentIndent);
    if (first < 0) return found;
    const childIndent = indentOf(lines[start + first]!);
    const atChild = (index: number): boolean => isContent(lines[index]!) && indentOf(lines[index]!) === childIndent;
    let hit = -1;
    if (typeof segment === 'number') {
      let item = -1;
      for (let index = start + first; index < end; index += 1) {
        if (!atChild(index) || !lines[index]!.trimStart().startsWith('-')) continue;
        item += 1;
        if (item === segment) {
          hit = index;
          break;
        }
      }
      if (hit < 0) return found;
      // The item's content starts after its `- `: read it as if the dash were a space.
      const line = lines[hit]!;
      lines[hit] = `${line.slice(0, childIndent)} ${line.slice(childIndent + 1)}`;
      found = hit + 1;
      if (lines[hit]!.trim() === '') {
        start = hit + 1;
        parentIndent = childIndent;
      } else {
        start = hit;
        parentIndent = childIndent;
      }
    } else {
      const key = new RegExp(`^\\s*(?:"${escape(segment)}"|'${escape(segment)}'|${escape(segment)})\\s*:(?:\\s|$)`);
      for (let index = start + first; index < end; index += 1) {
        if (atChild(index) && key.test(lines[index]!)) {
          hit = index;
          break;
        }
      }
      if (hit < 0) return found;
      found = hit + 1;
      const value = lines[hit]!.replace(key, '').trim();
      // A value on the key's own line (a scalar or a flow collection) holds whatever is below it.
      if (value !== '' && !value.startsWith('#') && !/^[|>]/.test(value) && !/^&\S+\s*(#.*)?$/.test(value))
        return found;
      start = hit + 1;
      // A sequence may sit at its key's own indentation (`versions:` then `- v1`).
      const next = lines.slice(start).find(isContent);
      parentIndent =
        next !== undefined && indentOf(next) === childIndent && next.trimStart().startsWith('-')
          ? childIndent - 0.5
          : childIndent;
    }
    // The block ends where a line is indented no deeper than the field itself (for a sequence at
    // its key's indentation: at the first line there that is no item).
    end = start;
    const sequenceAtKey = !Number.isInteger(parentIndent);
    while (end < lines.length) {
      const line = lines[end]!;
      if (
        isContent(line) &&
        (indentOf(line) <= parentIndent ||
          (sequenceAtKey && indentOf(line) === parentIndent + 0.5 && !line.trimStart().startsWith('-')))
      )
        break;
      end += 1;
    }
  }
  return found;
}
