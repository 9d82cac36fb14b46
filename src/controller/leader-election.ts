// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: one replica holds the
// lease and renews it; the others poll and take it over once it has expired or was released.
// Writes are optimistic (resourceVersion), so two candidates racing for one lease cannot both win.
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease, type V1LeaseSpec } from '@kubernetes/client-node';
import { describeKubeError, httpStatusOf } from './informer-set.js';
import type { RuntimeLogger } from './logger.js';
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
  logger: RuntimeLogger;
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

/** The time a MicroTime field holds, whether client-node gave a Date or (as 1.4 does) the wire string. */
function timeOf(value: Date | string | undefined): number | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
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
  /** The last holder seen; null before the first observation. */
  private observedHolder: string | undefined | null = null;

  constructor(private readonly options: LeaderElectorOptions) {
    const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = options;
    if (!(leaseDurationMs > renewDeadlineMs)) throw new Error('leader election: leaseDurationMs must be greater than renewDeadlineMs');
    if (!(renewDeadlineMs > retryPeriodMs) || !(retryPeriodMs > 0)) throw new Error('leader election: renewDeadlineMs must be greater than retryPeriodMs, which must be positive');
    this.api = options.kubeConfig.makeApiClient(CoordinationV1Api);
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
    if (lost) log.error({ ...fields, renewDeadlineMs: this.options.renewDeadlineMs }, 'lost leadership: could not renew the lease in time');
    else log.info(fields, 'stopped leading');
    try {
      callbacks.onStoppedLeading();
    } finally {
      // Also after a loss: a renewal that timed out may still have landed, and the release checks the holder.
      await this.withTimeout(this.release().then(() => true), this.options.renewDeadlineMs);
    }
    if (failure !== undefined) throw failure;
  }

  /** One attempt: true when this replica holds the lease afterwards. */
  private async tryAcquireOrRenew(callbacks: LeaderCallbacks): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const now = this.clock.now();
    const stamp = new V1MicroTime(now);
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (httpStatusOf(error) !== 404) return this.attemptFailed(error);
      try {
        await this.api.createNamespacedLease({
          namespace,
          body: { metadata: { name, namespace }, spec: { holderIdentity: identity, leaseDurationSeconds: this.leaseDurationSeconds, acquireTime: stamp, renewTime: stamp, leaseTransitions: 0 } },
        });
        this.observe(identity, callbacks);
        return true;
      } catch (createError) {
        // 409: another replica created it first.
        return httpStatusOf(createError) === 409 ? false : this.attemptFailed(createError);
      }
    }

    const spec: V1LeaseSpec = lease.spec ?? {};
    const holder = spec.holderIdentity || undefined;
    const renewedAt = timeOf(spec.renewTime as Date | string | undefined);
    const durationMs = (spec.leaseDurationSeconds ?? this.leaseDurationSeconds) * 1000;
    const expired = renewedAt === undefined || renewedAt + durationMs < now;
    if (holder !== identity) {
      this.observe(holder, callbacks);
      if (holder !== undefined && !expired) return false;
    }

    const next: V1LeaseSpec = { ...spec, holderIdentity: identity, leaseDurationSeconds: this.leaseDurationSeconds, renewTime: stamp };
    if (holder !== identity) {
      next.acquireTime = stamp;
      next.leaseTransitions = (spec.leaseTransitions ?? 0) + 1;
    }
    try {
      // metadata.resourceVersion makes this conditional: a 409 means someone else wrote first.
      await this.api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec: next } });
    } catch (error) {
      return httpStatusOf(error) === 409 ? false : this.attemptFailed(error);
    }
    this.observe(identity, callbacks);
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
      await this.api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec } });
      this.options.logger.info({ lease: `${namespace}/${name}`, identity }, 'released the leader lease');
    } catch (error) {
      // The lease expires by itself; a failed release only delays the next leader.
      this.options.logger.warn({ lease: `${namespace}/${name}`, error: describeKubeError(error) }, 'could not release the leader lease; it will expire');
    }
  }

  private attemptFailed(error: unknown): false {
    this.options.logger.warn({ lease: `${this.options.namespace}/${this.options.name}`, error: describeKubeError(error) }, 'leader lease request failed');
    return false;
  }

  private observe(holder: string | undefined, callbacks: LeaderCallbacks): void {
    if (holder === this.observedHolder) return;
    this.observedHolder = holder;
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
