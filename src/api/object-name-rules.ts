// Which names the API server accepts, per kind: a table of Kubernetes' own rules, so that a name it
// would refuse is refused here, before anything is written, and no name it accepts is.
// Sources (Kubernetes 1.34):
// - k8s.io/apimachinery/pkg/api/validation (generic.go, objectmeta.go): NameIsDNSSubdomain (RFC 1123
//   subdomain, 253 characters), NameIsDNSLabel (RFC 1123 label, 63), ValidateNamespaceName (a label);
//   every object's name must also be a path segment (api/validation/path: not "." or "..", no "/" or
//   "%"), which is all RBAC asks (pkg/apis/rbac/validation ValidateRBACName: `system:foo` is valid).
// - pkg/apis/core/validation: Namespace a label, Service an RFC 1035 label (an RFC 1123 label with the
//   RelaxedServiceNameValidation gate, which is the rule kept here so no cluster's valid name is refused),
//   ConfigMap, Secret, ServiceAccount, Pod, ... a subdomain.
// - pkg/apis/apps/validation: StatefulSet a label, the other workloads a subdomain;
//   pkg/apis/batch/validation: CronJob a subdomain of at most 52 characters (its Jobs add 11).
// - apiextensions-apiserver: custom resources a subdomain.
// - Cluster API's Cluster webhook (internal/webhooks/cluster.go): the name must also be a label value
//   (63 characters), since it becomes the cluster.x-k8s.io/cluster-name label.
// Kinds of Kubernetes' own groups not listed here are only held to the path-segment rule.

type NameFormat = 'dns-subdomain' | 'dns-label' | 'path-segment';

export interface NameRule {
  format: NameFormat;
  maxLength: number;
  /** Who refuses it, for messages. */
  by: string;
  /** Why the limit is what it is, when it is not Kubernetes' usual one. */
  why?: string;
}

const SUBDOMAIN: NameRule = { format: 'dns-subdomain', maxLength: 253, by: 'Kubernetes' };
const LABEL: NameRule = { format: 'dns-label', maxLength: 63, by: 'Kubernetes' };
const PATH_SEGMENT: NameRule = { format: 'path-segment', maxLength: Number.POSITIVE_INFINITY, by: 'Kubernetes' };

/** `group/Kind` (core group empty) -> its rule, where it differs from its group's default. */
const RULES = new Map<string, NameRule>();
const rule = (value: NameRule, group: string, kinds: string[]): void =>
  kinds.forEach((kind) => RULES.set(`${group}/${kind}`, value));

rule(LABEL, '', ['Namespace', 'Service']);
rule(SUBDOMAIN, '', [
  'Pod',
  'ConfigMap',
  'Secret',
  'ServiceAccount',
  'Endpoints',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'ReplicationController',
  'LimitRange',
  'ResourceQuota',
  'PodTemplate',
  'Node',
]);
rule(LABEL, 'apps', ['StatefulSet']);
rule(SUBDOMAIN, 'apps', ['Deployment', 'DaemonSet', 'ReplicaSet', 'ControllerRevision']);
rule(SUBDOMAIN, 'batch', ['Job']);
rule(
  { format: 'dns-subdomain', maxLength: 52, by: 'Kubernetes', why: 'a CronJob names its Jobs <name>-<11 characters>' },
  'batch',
  ['CronJob'],
);
rule(SUBDOMAIN, 'networking.k8s.io', ['Ingress', 'IngressClass', 'NetworkPolicy']);
rule(SUBDOMAIN, 'storage.k8s.io', ['StorageClass', 'CSIDriver', 'VolumeAttachment']);
rule(SUBDOMAIN, 'scheduling.k8s.io', ['PriorityClass']);
rule(SUBDOMAIN, 'node.k8s.io', ['RuntimeClass']);
rule(SUBDOMAIN, 'policy', ['PodDisruptionBudget']);
rule(SUBDOMAIN, 'admissionregistration.k8s.io', ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']);
rule(SUBDOMAIN, 'apiextensions.k8s.io', ['CustomResourceDefinition']);
rule(PATH_SEGMENT, 'rbac.authorization.k8s.io', ['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding']);
rule(
  {
    format: 'dns-subdomain',
    maxLength: 63,
    by: 'Cluster API',
    why: 'the name is the value of the cluster.x-k8s.io/cluster-name label',
  },
  'cluster.x-k8s.io',
  ['Cluster'],
);

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Kubernetes serves this group itself (or a Kubernetes SIG's CRDs do): only its listed kinds have rules beyond a path segment. */
const isKubernetesGroup = (group: string): boolean =>
  group === '' || !group.includes('.') || group === 'k8s.io' || group.endsWith('.k8s.io');

/** The rule the API server applies to names of this kind. */
export function nameRuleFor(apiVersion: string, kind: string): NameRule {
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  return RULES.get(`${group}/${kind}`) ?? (isKubernetesGroup(group) ? PATH_SEGMENT : SUBDOMAIN);
}

const DESCRIBED: Record<NameFormat, string> = {
  'dns-subdomain': 'lowercase letters, digits, "-" and ".", starting and ending with a letter or digit',
  'dns-label': 'lowercase letters, digits and "-", starting and ending with a letter or digit',
  'path-segment': 'not "." or "..", without "/" or "%"',
};

/** Why `name` breaks `rule`, as a sentence, or undefined when the API server accepts it. */
export function nameProblem(name: string, rule: NameRule): string | undefined {
  if (name === '') return 'must not be empty';
  const shape = rule.format === 'dns-label' ? DNS_LABEL : rule.format === 'dns-subdomain' ? DNS_SUBDOMAIN : undefined;
  // Every name is a path segment in the API's URLs, whatever else its kind asks.
  const segment = name !== '.' && name !== '..' && !/[/%]/.test(name);
  if (!segment || (shape && !shape.test(name)))
    return `must be ${rule.format === 'path-segment' ? 'a path segment' : `an RFC 1123 ${rule.format === 'dns-label' ? 'label' : 'subdomain'}`} (${DESCRIBED[rule.format]}); ${rule.by} refuses it`;
  if (name.length > rule.maxLength)
    return `is ${name.length} characters long, over the ${rule.maxLength} ${rule.by} allows${rule.why ? ` (${rule.why})` : ''}`;
  return undefined;
}

/** Why `namespace` is not a namespace name (an RFC 1123 label), or undefined when it is. */
export function namespaceProblem(namespace: string): string | undefined {
  return nameProblem(namespace, LABEL);
}
