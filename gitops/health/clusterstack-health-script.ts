// The one source of the Argo CD health scripts of our three kinds. Argo CD runs each script alone
// (no shared Lua modules), so every generated .lua file carries the whole body; what differs per
// kind is declared in HEALTH_SCRIPT_KINDS, and which condition reasons are Degraded comes from the
// failure table (FAILURE_REACTIONS), so the scripts and the controller never disagree on a reason.
// `npm run generate:health` writes the files (generate-health.ts); a test checks they are current.
import { FAILURE_REACTIONS, type FailureKind, type FailureReaction } from '../../src/core/failure.js';

/**
 * The Lua function `describe(condition, fallback)`: "<reason>: <message>", or whichever of the two
 * is set, or the fallback. Every generated script carries it (Argo CD runs each script alone).
 */
export const LUA_DESCRIBE_CONDITION = `-- "<reason>: <message>", or whichever of the two is set, or the fallback.
local function describe(condition, fallback)
  local reason = condition.reason
  local text = condition.message
  if type(reason) ~= "string" or reason == "" then
    reason = nil
  end
  if type(text) ~= "string" or text == "" then
    return reason or fallback
  end
  if reason ~= nil then
    return reason .. ": " .. text
  end
  return text
end`;

/** What one kind's health script does differently from the others. */
export interface HealthScriptKind {
  kind: 'ClusterStack' | 'ClusterStackRelease' | 'ClusterAddon';
  /**
   * Whether `status.ready` counts too: ClusterStackRelease and ClusterAddon carry it, as the
   * cluster-stack-operator writes it, so objects written by CSO-style controllers get a health.
   */
  readsStatusReady: boolean;
  /** hs.message while there is no Ready condition (and, with readsStatusReady, status.ready is not true). */
  noReadyMessage: string;
  /** What "anything else" usually is for this kind, for the header comment. */
  progressingExamples: string;
}

export const HEALTH_SCRIPT_KINDS: readonly HealthScriptKind[] = [
  {
    kind: 'ClusterStack',
    readsStatusReady: false,
    noReadyMessage: 'Waiting for the Ready condition',
    progressingExamples: 'waiting for releases, providers',
  },
  {
    kind: 'ClusterStackRelease',
    readsStatusReady: true,
    noReadyMessage: 'Waiting for the release to become ready',
    progressingExamples: 'downloading, rendering, syncing',
  },
  {
    kind: 'ClusterAddon',
    readsStatusReady: true,
    noReadyMessage: 'Waiting for the cluster addons to become ready',
    progressingExamples: 'rendering, waiting for stages',
  },
];

/** The argocd-cm key suffix (and file name without `.lua`) of a kind's script. */
export function healthScriptName(kind: HealthScriptKind['kind']): `clusterstack.x-k8s.io_${HealthScriptKind['kind']}` {
  return `clusterstack.x-k8s.io_${kind}`;
}

/**
 * The failure kinds Argo CD shows as Degraded and their reason suffixes, in table order. Throws
 * when a suffix of a Progressing kind ends with a Degraded one (or the reverse): the scripts only
 * test the Degraded suffixes, so such a pair would classify a reason unlike failureKindOfReason.
 */
export function degradedReasonSuffixes(reactions: Readonly<Record<FailureKind, FailureReaction>> = FAILURE_REACTIONS): {
  kinds: FailureKind[];
  suffixes: string[];
  progressingKinds: FailureKind[];
} {
  const entries = Object.entries(reactions) as [FailureKind, FailureReaction][];
  const degraded = entries.filter(([, reaction]) => reaction.argoHealth === 'Degraded');
  const progressing = entries.filter(([, reaction]) => reaction.argoHealth !== 'Degraded');
  for (const [degradedKind, { reasonSuffixes: degradedSuffixes }] of degraded) {
    for (const [progressingKind, { reasonSuffixes: progressingSuffixes }] of progressing) {
      for (const a of degradedSuffixes) {
        for (const b of progressingSuffixes) {
          if (a.endsWith(b) || b.endsWith(a)) {
            throw new Error(
              `failure table: reason suffix "${a}" (${degradedKind}, Degraded) and "${b}" (${progressingKind}, Progressing) overlap; a reason ending in the longer one would be classified both ways`,
            );
          }
        }
      }
    }
  }
  return {
    kinds: degraded.map(([kind]) => kind),
    suffixes: degraded.flatMap(([, reaction]) => [...reaction.reasonSuffixes]),
    progressingKinds: progressing.map(([kind]) => kind),
  };
}

/** Lines `--   left   -> right`, the arrows aligned; a row with no right side continues the one above. */
function outcomeTable(rows: readonly [string, string][]): string {
  const width = Math.max(...rows.filter(([, right]) => right !== '').map(([left]) => left.length));
  return rows
    .map(([left, right]) => (right === '' ? `--   ${left}` : `--   ${left.padEnd(width)}  -> ${right}`))
    .join('\n');
}

function luaStringList(values: readonly string[]): string {
  for (const value of values)
    if (!/^[A-Za-z]+$/.test(value)) throw new Error(`reason suffix ${JSON.stringify(value)} is not a PascalCase word`);
  return `{ ${values.map((value) => `"${value}"`).join(', ')} }`;
}

/** The complete Lua 5.1 health script of one of our kinds; same table, same bytes. */
export function clusterStackHealthScript(
  spec: HealthScriptKind,
  reactions: Readonly<Record<FailureKind, FailureReaction>> = FAILURE_REACTIONS,
): string {
  const { kinds, suffixes, progressingKinds } = degradedReasonSuffixes(reactions);
  const name = healthScriptName(spec.kind);
  const article = /^[AEIOU]/.test(spec.kind) ? 'an' : 'a';
  const rows: [string, string][] = [
    ['no status yet, or status for an older generation', 'Progressing'],
    ['Ready False, reason ending in one of DEGRADED_SUFFIXES', 'Degraded'],
    [`  (failure kinds ${kinds.join(', ')}: a person has to look)`, ''],
    spec.readsStatusReady ? ['Ready True and status.ready not false', 'Healthy'] : ['Ready True', 'Healthy'],
    ...(spec.readsStatusReady
      ? [
          ['no Ready condition but status.ready true', 'Healthy (status written by CSO-style controllers)'] as [
            string,
            string,
          ],
        ]
      : []),
    [`anything else (${spec.progressingExamples})`, 'Progressing'],
  ];

  const noReady = spec.readsStatusReady
    ? `if ready == nil then
  if status.ready == true then
    hs.status = "Healthy"
    hs.message = "Ready"
  else
    hs.status = "Progressing"
    hs.message = "${spec.noReadyMessage}"
  end
  return hs
end`
    : `if ready == nil then
  hs.status = "Progressing"
  hs.message = "${spec.noReadyMessage}"
  return hs
end`;

  const readyTrue = spec.readsStatusReady
    ? `if ready.status == "True" then
  if status.ready == false then
    hs.status = "Progressing"
    hs.message = "Ready condition is True but status.ready is not yet"
  else
    hs.status = "Healthy"
    hs.message = describe(ready, "Ready")
  end
  return hs
end`
    : `if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(ready, "Ready")
  return hs
end`;

  return `-- Argo CD health of ${article} ${spec.kind} (argocd-cm key
-- resource.customizations.health.${name}). Argo CD runs this with
-- the live object in \`obj\` and reads hs.status and hs.message. Written for Lua 5.1 (Argo CD embeds
-- gopher-lua): no integer division, bit operators or goto.
-- Generated by \`npm run generate:health\` from gitops/health/clusterstack-health-script.ts and the
-- failure table in src/core/failure.ts: edit those, not this file.
${outcomeTable(rows)}
local hs = {}

-- The reason suffixes of the failure kinds Argo CD shows as Degraded (${kinds.join(', ')}), from
-- FAILURE_REACTIONS; reasons of the other kinds (${progressingKinds.join(', ')}) are Progressing.
local DEGRADED_SUFFIXES = ${luaStringList(suffixes)}

local function needsUserFix(reason)
  if type(reason) ~= "string" then
    return false
  end
  for _, suffix in ipairs(DEGRADED_SUFFIXES) do
    if string.len(reason) >= string.len(suffix) and string.sub(reason, -string.len(suffix)) == suffix then
      return true
    end
  end
  return false
end

${LUA_DESCRIBE_CONDITION}

local generation = nil
if obj.metadata ~= nil then
  generation = obj.metadata.generation
end

local status = obj.status
if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to report status"
  return hs
end
if generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. tostring(generation)
  return hs
end

local ready = nil
if status.conditions ~= nil then
  for _, condition in ipairs(status.conditions) do
    if condition.type == "Ready" then
      ready = condition
    end
  end
end

${noReady}
if generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition to reflect generation " .. tostring(generation)
  return hs
end
if ready.status == "False" and needsUserFix(ready.reason) then
  hs.status = "Degraded"
  hs.message = describe(ready, "Not ready")
  return hs
end
${readyTrue}
hs.status = "Progressing"
hs.message = describe(ready, "Not ready yet")
return hs
`;
}
