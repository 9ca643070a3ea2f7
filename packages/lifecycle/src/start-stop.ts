import { engine, LABEL_POLICY } from '@ca-sandbox/docker';
import { egressNames } from '@ca-sandbox/network';
import { type IsolationReport, IsolationViolationError } from '@ca-sandbox/run';
import { inspectBox } from './_utils.js';
import { SandboxStartRefusedError } from './errors.js';
import { allowlistFirewallCheck, verifySandbox } from './list.js';
import { boxName } from './names.js';

/** What `start` reports: the box is running and passed the isolation gate (its report). */
export interface StartResult {
  id: string;
  /** False when the box was already running (the gate is re-run all the same). */
  started: boolean;
  report: IsolationReport;
}

export interface StopResult {
  id: string;
  /** False when the box was not running. */
  stopped: boolean;
}

/**
 * Starts a stopped box again (after a reboot or `stop`) behind the same gate as create: an
 * allowlist box only while its host egress rules are in place (else it stays stopped,
 * SandboxStartRefusedError); then, right after `docker start` and before anything else can run in
 * it, `verifySandbox` on a fresh inspect; a failing check stops the box again and throws
 * IsolationViolationError. Only the box's keep-alive process runs in between.
 */
export async function startSandbox(id: string): Promise<StartResult> {
  const inspect = await inspectBox(id);
  const name = boxName(id);
  const running = inspect.State.Running;
  if (!running) {
    const { gateway, internal } = egressNames(id);
    if (inspect.HostConfig.NetworkMode === internal) {
      // An allowlist of domains: its gateway first (verifySandbox then checks it); without it the
      // box has no way out at all, never an open one.
      await engine.container.start(gateway).catch(() => undefined);
    } else if (inspect.Config.Labels[LABEL_POLICY] === 'allowlist') {
      const rules = await allowlistFirewallCheck(id, inspect.Config.Labels);
      if (!rules.pass) throw new SandboxStartRefusedError(id, rules.seen);
    }
    await engine.container.start(name);
  }
  const report = await verifySandbox(id);
  if (!report.ok) {
    await engine.container.stop(name, { timeoutSeconds: 0 }).catch(() => undefined);
    throw new IsolationViolationError(
      name,
      report.checks.filter((check) => !check.pass),
    );
  }
  return { id, started: !running, report };
}

/** Stops a box (its processes end; the volume, network and labels stay); `start` brings it back. */
export async function stopSandbox(id: string): Promise<StopResult> {
  const inspect = await inspectBox(id);
  if (!inspect.State.Running) return { id, stopped: false };
  // docker-init passes SIGTERM on; what exec started gets 2 s, then docker sends SIGKILL.
  await engine.container.stop(boxName(id), { timeoutSeconds: 2 });
  return { id, stopped: true };
}
