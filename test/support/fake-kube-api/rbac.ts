/**
 * RBAC as the API server's authorizer applies it: Roles and ClusterRoles granted through
 * RoleBindings and ClusterRoleBindings to users, groups and service accounts, and a 403 Forbidden
 * with the real Status wording for everything else. Only requests made with a user token are
 * checked; the admin token is `system:masters`, as a cluster admin's kubeconfig is.
 */
import type { KubeObject } from './kube-object.js';
import { ApiError, failureStatus } from './status.js';
import type { ObjectStore } from './store.js';

/** Who a bearer token belongs to: a user name such as `system:serviceaccount:<ns>:<name>`, and groups. */
export interface FakeUser {
  name: string;
  groups?: string[];
}

/** The user of a service account token, with the groups the real token authenticator adds. */
export function serviceAccountUser(namespace: string, name: string): FakeUser {
  return {
    name: `system:serviceaccount:${namespace}:${name}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
  };
}

/** The authorizer's view of a resource request. */
export interface RequestAttributes {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}

interface Subject {
  kind?: string;
  name?: string;
  namespace?: string;
}

const RBAC = 'rbac.authorization.k8s.io';
const ROLES = `${RBAC}/roles`;
const ROLE_BINDINGS = `${RBAC}/rolebindings`;
const CLUSTER_ROLES = `${RBAC}/clusterroles`;
const CLUSTER_ROLE_BINDINGS = `${RBAC}/clusterrolebindings`;

/** The RBAC kinds, served as built-ins so tests can apply `deploy/` manifests as they are. */
export const RBAC_RESOURCES = [
  { group: RBAC, version: 'v1', kind: 'Role', plural: 'roles', namespaced: true },
  { group: RBAC, version: 'v1', kind: 'RoleBinding', plural: 'rolebindings', namespaced: true },
  { group: RBAC, version: 'v1', kind: 'ClusterRole', plural: 'clusterroles', namespaced: false },
  { group: RBAC, version: 'v1', kind: 'ClusterRoleBinding', plural: 'clusterrolebindings', namespaced: false },
] as const;

function matches(values: string[] | undefined, wanted: string): boolean {
  return (values ?? []).some((value) => value === '*' || value === wanted);
}

function resourceMatches(resources: string[] | undefined, resource: string, subresource: string | undefined): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return (resources ?? []).some((entry) => {
    if (entry === '*' || entry === combined) return true;
    // `*/status` grants that subresource of every resource; `pods/*` every subresource of pods.
    if (subresource && entry === `*/${subresource}`) return true;
    return subresource !== undefined && entry === `${resource}/*`;
  });
}

function ruleAllows(rule: PolicyRule, request: RequestAttributes): boolean {
  if (!matches(rule.verbs, request.verb) || !matches(rule.apiGroups, request.group)) return false;
  if (!resourceMatches(rule.resources, request.resource, request.subresource)) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (request.name !== undefined && names.includes(request.name));
}

function subjectMatches(subject: Subject, user: FakeUser): boolean {
  switch (subject.kind) {
    case 'ServiceAccount':
      return user.name === `system:serviceaccount:${subject.namespace ?? ''}:${subject.name ?? ''}`;
    case 'User':
      return user.name === subject.name;
    case 'Group':
      return (user.groups ?? []).includes(subject.name ?? '');
    default:
      return false;
  }
}

function rulesOf(role: KubeObject | undefined): PolicyRule[] {
  return ((role?.['rules'] as PolicyRule[] | undefined) ?? []).filter(
    (rule) => typeof rule === 'object' && rule !== null,
  );
}

/** The rules that apply to `user` for a request in `namespace` (undefined: cluster scope). */
function grantedRules(store: ObjectStore, user: FakeUser, namespace: string | undefined): PolicyRule[] {
  const rules: PolicyRule[] = [];
  const bound = (binding: KubeObject) =>
    ((binding['subjects'] as Subject[] | undefined) ?? []).some((subject) => subjectMatches(subject, user));
  const roleRef = (binding: KubeObject) => (binding['roleRef'] as { kind?: string; name?: string } | undefined) ?? {};
  for (const binding of store.list(CLUSTER_ROLE_BINDINGS)) {
    if (!bound(binding)) continue;
    const ref = roleRef(binding);
    if (ref.kind === 'ClusterRole') rules.push(...rulesOf(store.get(CLUSTER_ROLES, undefined, ref.name ?? '')));
  }
  if (namespace !== undefined) {
    for (const binding of store.list(ROLE_BINDINGS, namespace)) {
      if (!bound(binding)) continue;
      const ref = roleRef(binding);
      if (ref.kind === 'ClusterRole') rules.push(...rulesOf(store.get(CLUSTER_ROLES, undefined, ref.name ?? '')));
      else if (ref.kind === 'Role') rules.push(...rulesOf(store.get(ROLES, namespace, ref.name ?? '')));
    }
  }
  return rules;
}

/** Throws the 403 a real API server answers when no rule bound to `user` allows the request. */
export function authorize(store: ObjectStore, user: FakeUser, request: RequestAttributes): void {
  if (grantedRules(store, user, request.namespace).some((rule) => ruleAllows(rule, request))) return;
  const resource = request.subresource ? `${request.resource}/${request.subresource}` : request.resource;
  const scope = request.namespace !== undefined ? `in the namespace "${request.namespace}"` : 'at the cluster scope';
  const reason = `User "${user.name}" cannot ${request.verb} resource "${resource}" in API group "${request.group}" ${scope}`;
  const qualified = request.group ? `${request.resource}.${request.group}` : request.resource;
  const message =
    request.name !== undefined
      ? `${qualified} "${request.name}" is forbidden: ${reason}`
      : `${qualified} is forbidden: ${reason}`;
  const details: Record<string, string> = { kind: request.resource };
  if (request.name !== undefined) details['name'] = request.name;
  if (request.group) details['group'] = request.group;
  throw new ApiError(failureStatus(403, message, 'Forbidden', details));
}
