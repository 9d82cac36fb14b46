// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: one replica holds the
// lease and renews it; the others poll and take it over once it has expired or was released.
// Writes are optimistic (resourceVersion), so two candidates racing for one lease cannot both win.
//
// Expiry is judged on this replica's own clock only, never from the times in the Lease: a
// candidate remembers when it last saw the lease record change ("observed time") and takes over
// only when it has seen no change for the lease duration. Clock skew between replicas (a leader
// whose renewTime runs 30 s behind, or ahead) does not matter; only the rate of the clocks does.
//
// Hand-written on purpose: @kubernetes/client-node ships no leader election, and the npm packages
// that offer one are small single-author projects that judge expiry from the Lease's timestamps
// (so clock skew between replicas decides who leads). No maintained library fits.
import {
  CoordinationV1Api,
  V1MicroTime,
  type KubeConfig,
  type V1Lease,
  type V1LeaseSpec,
} from '@kubernetes/client-node';
import { FIELD_MANAGER, identifyClient } from './client-identity.js';
import { describeKubeError, httpStatusOf } from './informer-set.js';
import type { Logger } from '../../core/logger.js';
import { systemClock, type Clock, type ClockTimer } from './runtime-contract.js';

export interface LeaderElectorOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** The Lease name, e.g. `clusterstack-gitops-controller`. */
  name: string;
  /** Unique per replica: the pod name. */
  identity: string;
  /** How long a lease stays valid after its last renewal (rounded up to whole seconds). E.g. 15 s. */
  leaseDurationMs: number;
  /** The leader gives up when it could not renew for this long. Less than leaseDurationMs, e.g. 10 s. */
  renewDeadlineMs: number;
  /** Pause between attempts to acquire or renew, e.g. 2 s. */
  retryPeriodMs: number;
  clock?: Clock;
  logger: Logger;
}

export interface LeaderCallbacks {
  /**
   * Called when this replica becomes leader. `signal` aborts when leadership ends; a rejection ends
   * leadership (the lease is released) and makes `run()` reject with it.
   */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /** Called once when leadership ends, by loss or by stop(). */
  onStoppedLeading: () => void;
  /** Called when the observed holder changes (undefined: nobody holds the lease). */
  onNewLeader?: (identity: string | undefined) => void;
}

/** The lease record as compared between polls: any change means its holder is alive (or changed). */
function recordOf(spec: V1LeaseSpec | undefined): string {
  const time = (value: unknown) =>
    value instanceof Date ? value.toISOString() : value === undefined || value === null ? null : String(value);
  return JSON.stringify([
    spec?.holderIdentity ?? '',
    spec?.leaseDurationSeconds ?? null,
    time(spec?.acquireTime),
    time(spec?.renewTime),
    spec?.leaseTransitions ?? null,
  ]);
}

/** Campaigns for a Lease and keeps it while leading. */
export class LeaderElector {
  private readonly api: CoordinationV1Api;
  private readonly clock: Clock;
  private readonly leaseDurationSeconds: number;
  private leading = false;
  private stopping = false;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  /** The last holder reported to onNewLeader; null before the first observation. */
  private reportedHolder: string | undefined | null = null;
  /** The lease as last read or written, its record, and when (on our clock) that record was first seen. */
  private observed: { lease: V1Lease; record: string; at: number } | undefined;

  constructor(private readonly options: LeaderElectorOptions) {
    const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = options;
    if (!(leaseDurationMs > renewDeadlineMs))
      throw new Error('leader election: leaseDurationMs must be greater than renewDeadlineMs');
    if (!(renewDeadlineMs > retryPeriodMs) || !(retryPeriodMs > 0))
      throw new Error('leader election: renewDeadlineMs must be greater than retryPeriodMs, which must be positive');
    this.api = identifyClient(options.kubeConfig).makeApiClient(CoordinationV1Api);
    this.clock = options.clock ?? systemClock;
    this.leaseDurationSeconds = Math.max(1, Math.ceil(leaseDurationMs / 1000));
  }

  /** True while this replica holds the lease. */
  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until it leads, then renews until leadership ends (renewal failing past the
   * deadline, stop(), or onStartedLeading rejecting). Resolves when leadership has ended; it does
   * not campaign again: a controller that lost its lease should exit and let Kubernetes restart it.
   */
  run(callbacks: LeaderCallbacks): Promise<void> {
    if (this.running) throw new Error('leader election: run() is already running');
    this.stopping = false;
    this.running = this.campaign(callbacks).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Stops campaigning or leading; releases the lease when held, so another replica takes over at once. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.running?.catch(() => undefined);
  }

  private async campaign(callbacks: LeaderCallbacks): Promise<void> {
    const log = this.options.logger;
    const fields = { lease: `${this.options.namespace}/${this.options.name}`, identity: this.options.identity };
    while (!this.stopping && !(await this.tryAcquireOrRenew(callbacks))) await this.sleep(this.options.retryPeriodMs);
    if (this.stopping) return;

    this.leading = true;
    const leadership = new AbortController();
    log.info(fields, 'became leader');
    let failure: unknown;
    Promise.resolve()
      .then(() => callbacks.onStartedLeading(leadership.signal))
      .catch((error: unknown) => {
        failure = error ?? new Error('onStartedLeading rejected');
        this.stopping = true;
        this.wake?.();
      });

    let lastRenew = this.clock.now();
    let lost = false;
    while (!this.stopping) {
      await this.sleep(this.options.retryPeriodMs);
      if (this.stopping) break;
      const remaining = lastRenew + this.options.renewDeadlineMs - this.clock.now();
      if ((await this.withTimeout(this.tryAcquireOrRenew(callbacks), remaining)) === true) {
        lastRenew = this.clock.now();
      } else if (this.clock.now() - lastRenew >= this.options.renewDeadlineMs) {
        lost = true;
        break;
      }
    }

    this.leading = false;
    leadership.abort(new Error('leadership ended'));
    if (lost)
      log.error(
        { ...fields, renewDeadlineMs: this.options.renewDeadlineMs },
        'lost leadership: could not renew the lease in time',
      );
    else log.info(fields, 'stopped leading');
    try {
      callbacks.onStoppedLeading();
    } finally {
      // Also after a loss: a renewal that timed out may still have landed, and the release checks the holder.
      await this.withTimeout(
        this.release().then(() => true),
        this.options.renewDeadlineMs,
      );
    }
    if (failure !== undefined) throw failure;
  }

  /** Whether we hold the lease by the record we saw last. */
  private holdsObserved(): boolean {
    return this.observed?.lease.spec?.holderIdentity === this.options.identity;
  }

  /** The observed record is still valid: it changed less than its lease duration ago, by our clock. */
  private observedValid(now: number): boolean {
    if (!this.observed) return false;
    const seconds = this.observed.lease.spec?.leaseDurationSeconds ?? this.leaseDurationSeconds;
    return this.observed.at + seconds * 1000 > now;
  }

  /** Remembers a lease as read or written; the observed time moves only when its record changed. */
  private setObserved(lease: V1Lease, now: number, callbacks: LeaderCallbacks): void {
    const record = recordOf(lease.spec);
    if (!this.observed || this.observed.record !== record) this.observed = { lease, record, at: now };
    else this.observed = { ...this.observed, lease };
    this.report(lease.spec?.holderIdentity || undefined, callbacks);
  }

  /** One attempt (client-go's tryAcquireOrRenew): true when this replica holds the lease afterwards. */
  private async tryAcquireOrRenew(callbacks: LeaderCallbacks): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const now = this.clock.now();
    const stamp = new V1MicroTime(now);

    // 1. The leader renews straight from the lease it last wrote; a conflict falls back to reading it.
    if (this.holdsObserved() && this.observedValid(now)) {
      const known = this.observed!.lease;
      const renewed: V1Lease = {
        ...known,
        spec: {
          ...known.spec,
          holderIdentity: identity,
          leaseDurationSeconds: this.leaseDurationSeconds,
          renewTime: stamp,
        },
      };
      try {
        this.setObserved(
          await this.api.replaceNamespacedLease({ name, namespace, body: renewed, fieldManager: FIELD_MANAGER }),
          this.clock.now(),
          callbacks,
        );
        return true;
      } catch (error) {
        if (httpStatusOf(error) !== 409) this.attemptFailed(error);
      }
    }

    // 2. Read the lease, or create it.
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (httpStatusOf(error) !== 404) return this.attemptFailed(error);
      try {
        const created = await this.api.createNamespacedLease({
          namespace,
          fieldManager: FIELD_MANAGER,
          body: {
            metadata: { name, namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds: this.leaseDurationSeconds,
              acquireTime: stamp,
              renewTime: stamp,
              leaseTransitions: 0,
            },
          },
        });
        this.setObserved(created, this.clock.now(), callbacks);
        return true;
      } catch (createError) {
        // 409: another replica created it first.
        return httpStatusOf(createError) === 409 ? false : this.attemptFailed(createError);
      }
    }

    // 3. A record we have not seen before restarts the lease duration, whatever times it carries.
    this.setObserved(lease, this.clock.now(), callbacks);
    const spec: V1LeaseSpec = lease.spec ?? {};
    const holder = spec.holderIdentity || undefined;
    if (holder !== undefined && holder !== identity && this.observedValid(this.clock.now())) return false;

    // 4. Take it (expired or released) or renew it.
    return this.takeOrRenew(lease, holder, stamp, callbacks);
  }

  /** Writes this replica into the lease it read, as its new holder or renewing its hold; false when another wrote first. */
  private async takeOrRenew(
    lease: V1Lease,
    holder: string | undefined,
    stamp: V1MicroTime,
    callbacks: LeaderCallbacks,
  ): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const spec: V1LeaseSpec = lease.spec ?? {};
    const next: V1LeaseSpec = {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds: this.leaseDurationSeconds,
      renewTime: stamp,
    };
    if (holder !== identity) {
      next.acquireTime = stamp;
      next.leaseTransitions = (spec.leaseTransitions ?? 0) + 1;
    }
    try {
      // metadata.resourceVersion makes this conditional: a 409 means someone else wrote first.
      this.setObserved(
        await this.api.replaceNamespacedLease({
          name,
          namespace,
          body: { ...lease, spec: next },
          fieldManager: FIELD_MANAGER,
        }),
        this.clock.now(),
        callbacks,
      );
    } catch (error) {
      return httpStatusOf(error) === 409 ? false : this.attemptFailed(error);
    }
    return true;
  }

  /** Gives the lease up (clears holderIdentity) if this replica still holds it. */
  private async release(): Promise<void> {
    const { namespace, name, identity } = this.options;
    try {
      const lease = await this.api.readNamespacedLease({ name, namespace });
      if (lease.spec?.holderIdentity !== identity) return;
      const stamp = new V1MicroTime(this.clock.now());
      const spec: V1LeaseSpec = { ...lease.spec, leaseDurationSeconds: 1, renewTime: stamp };
      delete spec.holderIdentity;
      await this.api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec }, fieldManager: FIELD_MANAGER });
      this.options.logger.info({ lease: `${namespace}/${name}`, identity }, 'released the leader lease');
    } catch (error) {
      // The lease expires by itself; a failed release only delays the next leader.
      this.options.logger.warn(
        { lease: `${namespace}/${name}`, error: describeKubeError(error) },
        'could not release the leader lease; it will expire',
      );
    }
  }

  private attemptFailed(error: unknown): false {
    this.options.logger.warn(
      { lease: `${this.options.namespace}/${this.options.name}`, error: describeKubeError(error) },
      'leader lease request failed',
    );
    return false;
  }

  private report(holder: string | undefined, callbacks: LeaderCallbacks): void {
    if (holder === this.reportedHolder) return;
    this.reportedHolder = holder;
    try {
      callbacks.onNewLeader?.(holder);
    } catch (error) {
      this.options.logger.error({ error: describeKubeError(error) }, 'onNewLeader callback failed');
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: ClockTimer | undefined = undefined;
      const done = () => {
        if (timer !== undefined) this.clock.clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      this.wake = done;
      timer = this.clock.setTimeout(done, ms);
    });
  }

  /** The attempt's result, or undefined when it takes longer than `ms` (the request is left to finish). */
  private withTimeout(attempt: Promise<boolean>, ms: number): Promise<boolean | undefined> {
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => resolve(undefined), Math.max(0, ms));
      attempt.then(
        (value) => {
          this.clock.clearTimeout(timer);
          resolve(value);
        },
        () => {
          this.clock.clearTimeout(timer);
          resolve(false);
        },
      );
    });
  }
}
