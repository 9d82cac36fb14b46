// The rules git applies to a branch name (refs.c, check_refname_format), as the publishers check
// `--branch` before they touch a repository.
/** Whether `name` is a valid branch name by `git check-ref-format --branch`'s rules (asked without starting git). */
export function isValidBranchName(name: string): boolean {
  if (
    name === '' ||
    name === '@' ||
    name === 'HEAD' ||
    name.startsWith('-') ||
    name.startsWith('/') ||
    name.endsWith('/') ||
    name.endsWith('.')
  )
    return false;
  if (name.includes('..') || name.includes('//') || name.includes('@{') || /[\x00-\x20\x7f~^:?*[\\]/.test(name))
    return false;
  return name.split('/').every((component) => !component.startsWith('.') && !component.endsWith('.lock'));
}
