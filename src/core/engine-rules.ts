// What the render needs to know about the GitOps engines that apply the tree, without naming them:
// the engines' own annotation keys and hook types live in gitops/wiring, which fills these in for
// the chosen engine (the pipeline, CLI and controller choose it). The core only calls through here.
import type { HookPlacement } from '../output/helm-hooks-record.js';

/** Marks that keep the engines from pruning an object that leaves (or never leaves) their source. */
export interface KeepMarks {
  /** The annotations to set on an object that has `existing`, merged with what it has (a key it has is rewritten, never duplicated). */
  annotationsFor(existing: Readonly<Record<string, string>>): Record<string, string>;
  /** Whether a line of a written object (`  key: value`, indented) is one of these marks as annotationsFor adds it to an unmarked object. */
  isMarkLine(line: string): boolean;
}

/** How an engine treats an object that carries hook annotations. */
export interface HookHandling {
  /** Whether the engine handles it as a hook (not as an ordinary object of its directory). */
  hook: boolean;
  /** Its hook types in the engine's words (PreSync, PostDelete, ...); empty for an ordinary object or an unmapped helm hook. */
  types: string[];
  /** The sync phases in which a sync applies it; ['Sync'] for an ordinary object, [] for a hook no sync runs. */
  syncPhases: string[];
}

/** An engine that maps helm hooks to its own phases, so they stay in the unit's directory. */
export interface HookPhases {
  /** The placement recorded in the tree (provenance.json `helmHooks`). */
  placement: Exclude<HookPlacement, 'staged'>;
  /** The engine's name for people (`Argo CD`). */
  engine: string;
  /** The engine's own hook annotation, which wins over helm's when it names a type. */
  hookAnnotation: string;
  /** What the engine does with an object carrying these annotations. */
  handling(annotations: Readonly<Record<string, string>> | undefined): HookHandling;
}

/** The engine's rules a render follows: one render option, filled in from the chosen engine. */
export interface EngineRules {
  keepMarks: KeepMarks;
  /** Absent: helm hooks are staged (ordered in helm-hooks/ or left out), for engines that do not map them. */
  hookPhases?: HookPhases;
}
