import { randomBytes } from 'node:crypto';
import type { ManifestRead } from '@ca-sandbox/build';
import {
  LABEL_CREATED,
  LABEL_POLICY,
  LABEL_REPO,
  type Runtime,
  sandboxLabels,
  sandboxNames,
} from '@ca-sandbox/docker';
import type { GatewayCredential } from '@ca-sandbox/network';
import { CreateEgress } from '../egress.js';
import type { BoxLimits } from '../limits.js';
import type { ResolvedCreateOptions } from '../options.js';
import { LABEL_INSTANCE, LABEL_SOURCE } from '../record.js';
import type { ParsedSource } from '../source.js';
import { type CreateHooks, Progress } from './progress.js';

/**
 * What the phases of one create share: who the sandbox is, what the caller asked, what preflight
 * found, and what a cleanup must know (the per-call instance label, whether the firewall was touched).
 */
export class CreateContext {
  /** Labels every object of this call: a cleanup removes exactly these, never another create's. */
  readonly instance = randomBytes(8).toString('hex');
  readonly names: ReturnType<typeof sandboxNames>;
  readonly labels: Record<string, string>;
  readonly progress: Progress;
  /** The egress gateway of the clone and the install (started only when one of them needs it). */
  readonly egress: CreateEgress;
  /** The box's memory/cpus/pids, fitted to the engine in preflight. */
  limits: BoxLimits;
  /** The box's runtime, chosen in preflight (chooseRuntime). */
  runtime: Runtime;
  /** Set before applyAllowlist runs: only then may a cleanup touch the id's firewall rules. */
  firewallTouched = false;
  /** Stops the helper's heartbeat (set once the helper runs). */
  stopHeartbeat: () => void = () => {};
  /**
   * Settles when the clone phase ends: true once the checkout is written. The reads started
   * beside the clone (the manifest read, the early box's link) wait for it before they look.
   */
  readonly checkoutWritten: Promise<boolean>;
  /** Settles checkoutWritten (index.ts, when the clone phase ends either way). */
  readonly checkoutDone: (written: boolean) => void;
  /** The helper's manifest read, started beside the clone (clone.ts) and gated on checkoutWritten. */
  manifests?: Promise<ManifestRead>;
  /** The clone's file listing for the report (file-listing.ts), taken in the helper beside the manifest read. */
  cloneListing?: Promise<void>;
  /**
   * The values of `--credential`, read on the host before anything runs: they go to the box's
   * gateway by an exec's stdin and nowhere else (no label, no variable, no log).
   */
  credentials: GatewayCredential[] = [];
  /** Work started beside another phase: a cleanup waits for it, so it sees all that it made. */
  private readonly inFlight: Promise<unknown>[] = [];

  constructor(
    readonly id: string,
    readonly options: ResolvedCreateOptions,
    readonly source: ParsedSource,
    readonly hooks: CreateHooks,
  ) {
    let settle: (written: boolean) => void = () => {};
    this.checkoutWritten = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    this.checkoutDone = settle;
    this.names = sandboxNames(id);
    this.limits = { memory: options.memory, cpus: options.cpus, pids: options.pids };
    this.runtime = options.runtime;
    this.labels = sandboxLabels(id, {
      [LABEL_REPO]: source.repoName,
      [LABEL_POLICY]: options.policy,
      [LABEL_CREATED]: new Date().toISOString(),
      [LABEL_SOURCE]: source.display,
      [LABEL_INSTANCE]: this.instance,
    });
    this.egress = new CreateEgress(id, this.labels, hooks.signal);
    this.progress = new Progress(hooks);
  }

  /** A URL clone, an install or an allowlist of domains goes through the egress gateway. */
  needsGateway(): boolean {
    const urlClone = this.source.kind === 'url' && this.options.cloneNetwork === undefined;
    return urlClone || this.options.policy !== 'offline';
  }

  /** An allowlist of domains: the box itself reaches them through the gateway. */
  boxUsesGateway(): boolean {
    return this.options.policy === 'allowlist' && this.options.allowVia === 'gateway';
  }

  /**
   * Starts `work` beside what follows. Its failure is thrown where the result is awaited (so a
   * phase's own error keeps its precedence); a cleanup first waits for it to settle.
   */
  beside<T>(work: Promise<T>): Promise<T> {
    work.catch(() => undefined);
    this.inFlight.push(work);
    return work;
  }

  /** Resolves once everything started `beside` has finished, either way. */
  async settled(): Promise<void> {
    await Promise.allSettled(this.inFlight);
  }

  checkAborted(): void {
    this.progress.checkAborted();
  }

  log(line: string): void {
    this.progress.log(line);
  }
}
