// The Secrets and ConfigMaps Cluster API provider objects name, read for the render the way the CLI
// reads them from its input files: `spec.configSecret` (a Secret, else a ConfigMap of that name) and
// `spec.additionalManifests` (a ConfigMap) by name with `get`, and `spec.fetchConfig.selector`
// ConfigMaps by label with `list` in the provider's namespace. Read again on every reconcile, never
// watched or cached: RBAC cannot narrow list/watch by name, so a watch would need every Secret of the
// namespace, while `get` of the named ones needs only that verb. What cannot be read becomes the
// provider's problem (it is withheld alone), naming the object and, for a 403, the missing
// permission. Secret values go into the render's inputs only: never into a message.
import { type CapiProvider, describeProvider } from '../../api/provider-types.js';
import type { KubeObject } from '../../api/types.js';
import type { Problem } from '../../core/problem.js';
import { providerInputKey } from '../../providers/plan-providers.js';
import { KubeRequestError, type ConfigMapReader, type SecretStore } from '../runtime/kube-client.js';
import { compareText } from '../../core/compare-text.js';

/** The ClusterRole in deploy/ granting what this reads; bound per namespace holding such providers. */
const PROVIDER_CONFIG_ROLE = 'clusterstack-gitops-provider-config';

export interface ProviderConfigRead {
  /** The Secrets and ConfigMaps found, as input objects. */
  objects: KubeObject[];
  /** Why a named object could not be read, per provider (`Kind ns/name`) and field path. */
  problems: Map<string, Problem>;
}

type Selector = NonNullable<NonNullable<NonNullable<CapiProvider['spec']>['fetchConfig']>['selector']>;

/** A metav1.LabelSelector as the API's `labelSelector` query parameter. */
function labelSelectorQuery(selector: Selector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`);
  for (const expression of selector.matchExpressions ?? []) {
    const values = (expression.values ?? []).join(',');
    switch (expression.operator) {
      case 'In':
        parts.push(`${expression.key} in (${values})`);
        break;
      case 'NotIn':
        parts.push(`${expression.key} notin (${values})`);
        break;
      case 'Exists':
        parts.push(expression.key);
        break;
      case 'DoesNotExist':
        parts.push(`!${expression.key}`);
        break;
      default:
        break; // Validated with the provider; the fetcher matches the full selector again.
    }
  }
  return parts.join(',');
}

function secretObject(secret: Awaited<ReturnType<SecretStore['readSecret']>> & object): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: secret.metadata.name,
      ...(secret.metadata.namespace ? { namespace: secret.metadata.namespace } : {}),
    },
    ...(secret.data ? { data: secret.data } : {}),
  } as KubeObject;
}

/** What a failed read tells the person: a missing permission by verb, resource and namespace, else the API's answer. */
function readFailure(
  error: unknown,
  verb: 'get' | 'list',
  resource: 'secrets' | 'configmaps',
  namespace: string,
  what: string,
): Omit<Problem, 'object' | 'path'> {
  if (error instanceof KubeRequestError && error.status === 403) {
    return {
      message:
        `${what} cannot be read: the controller's service account may not ${verb} ${resource} in namespace ${namespace} (403 Forbidden). ` +
        `Bind the ClusterRole ${PROVIDER_CONFIG_ROLE} (deploy/) there, e.g. kubectl create rolebinding ${PROVIDER_CONFIG_ROLE} -n ${namespace} --clusterrole ${PROVIDER_CONFIG_ROLE} --serviceaccount clusterstack-system:clusterstack-gitops-controller`,
    };
  }
  return { message: `${what} cannot be read: ${(error as Error).message}`, retryable: true };
}

/** Reads every Secret and ConfigMap the providers name; never throws for one provider's object. */
export async function readProviderConfig(
  providers: KubeObject[],
  reader: Pick<SecretStore, 'readSecret'> & ConfigMapReader,
): Promise<ProviderConfigRead> {
  const found = new Map<string, KubeObject>();
  const problems = new Map<string, Problem>();
  const keep = (object: KubeObject): void => {
    found.set(`${object.kind}/${object.metadata.namespace ?? 'default'}/${object.metadata.name}`, object);
  };
  await Promise.all(
    (providers as CapiProvider[]).map(async (provider) => {
      const namespace = provider.metadata.namespace ?? 'default';
      const spec = provider.spec ?? {};
      const fail = (path: string, problem: Omit<Problem, 'object' | 'path'>): void => {
        problems.set(providerInputKey(provider, path), { object: describeProvider(provider), path, ...problem });
      };
      if (spec.configSecret?.name) {
        const where = spec.configSecret.namespace ?? namespace;
        const name = spec.configSecret.name;
        try {
          const secret = await reader.readSecret(where, name);
          if (secret) keep(secretObject(secret));
          else {
            // The operator reads a Secret; a ConfigMap of that name serves too, as in the CLI's inputs.
            try {
              const configMap = await reader.readConfigMap(where, name);
              if (configMap) keep(configMap);
              else
                fail('spec.configSecret', {
                  message: `Secret ${where}/${name} does not exist (nor a ConfigMap of that name); create it with the provider's variables`,
                });
            } catch (error) {
              fail('spec.configSecret', readFailure(error, 'get', 'configmaps', where, `ConfigMap ${where}/${name}`));
            }
          }
        } catch (error) {
          fail('spec.configSecret', readFailure(error, 'get', 'secrets', where, `Secret ${where}/${name}`));
        }
      }
      if (spec.additionalManifests?.name) {
        const where = spec.additionalManifests.namespace ?? namespace;
        const name = spec.additionalManifests.name;
        try {
          const configMap = await reader.readConfigMap(where, name);
          if (configMap) keep(configMap);
          else
            fail('spec.additionalManifests', {
              message: `ConfigMap ${where}/${name} does not exist; create it with the manifests under data.manifests`,
            });
        } catch (error) {
          fail(
            'spec.additionalManifests',
            readFailure(error, 'get', 'configmaps', where, `ConfigMap ${where}/${name}`),
          );
        }
      }
      if (spec.fetchConfig?.selector) {
        try {
          for (const configMap of await reader.listConfigMaps(namespace, labelSelectorQuery(spec.fetchConfig.selector)))
            keep(configMap);
        } catch (error) {
          fail(
            'spec.fetchConfig.selector',
            readFailure(error, 'list', 'configmaps', namespace, `The ConfigMaps of spec.fetchConfig.selector`),
          );
        }
      }
    }),
  );
  return {
    objects: [...found.values()].sort((a, b) =>
      compareText(
        `${a.kind}/${a.metadata.namespace}/${a.metadata.name}`,
        `${b.kind}/${b.metadata.namespace}/${b.metadata.name}`,
      ),
    ),
    problems,
  };
}
