// The one text order for sorting: UTF-16 code units, as `<` compares strings. Unlike localeCompare
// it needs no ICU collation data (whose first use costs a CLI run about 13 ms) and cannot change
// with the machine's locale. Kubernetes names (lowercase letters, digits, `-`, `.`) and the `/`
// between namespace and name sort the same either way.
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
