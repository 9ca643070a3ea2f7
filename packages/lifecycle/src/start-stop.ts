import { engine, LABEL_POLICY } from '@ca-sandbox/docker';
import type { GatewayCredential } from '@ca-sandbox/network';
import { egressNames } from '@ca-sandbox/network';
import {
  type IsolationReport,
  IsolationViolationError,
  readGatewayCa,
  restoreCredentials,
} from '@ca-sandbox/run';
import { inspectBox } from './_utils.js';
import { userCaPem, writeBoxTrust } from './box-env.js';
import { writeClaudeHome } from './claude-home.js';
import {
  type CredentialSpec,
  credentialsFromLabel,
  gatewayHoldsClaudeKey,
  LABEL_CREDENTIALS,
  readCredential,
} from './credentials.js';
import { SandboxStartRefusedError } from './errors.js';
import { recordGate } from './gate-log.js';
import { allowlistFirewallCheck, verifySandbox } from './list.js';
import { boxName } from './names.js';
import { LABEL_WITH_CLAUDE } from './record.js';

/** What `start` reports: the box is running and passed the isolation gate (its report). */
export interface StartResult {
  id: string;
  /** False when the box was already running (the gate is re-run all the same). */
  started: boolean;
  report: IsolationReport;
  /** What the start could not bring back as it was (a credential whose source is gone). */
  notices: string[];
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
  const notices: string[] = [];
  if (!running) {
    const { gateway, internal } = egressNames(id);
    const behindGateway = inspect.HostConfig.NetworkMode === internal;
    if (behindGateway) {
      // An allowlist of domains: its gateway first (verifySandbox then checks it); without it the
      // box has no way out at all, never an open one.
      await engine.container.start(gateway).catch(() => undefined);
    } else if (inspect.Config.Labels[LABEL_POLICY] === 'allowlist') {
      const rules = await allowlistFirewallCheck(id, inspect.Config.Labels);
      if (!rules.pass) throw new SandboxStartRefusedError(id, rules.seen);
    }
    const specs = behindGateway ? credentialsFromLabel(inspect.Config.Labels[LABEL_CREDENTIALS]) : [];
    if (specs.length > 0) {
      const withClaude = inspect.Config.Labels[LABEL_WITH_CLAUDE] === 'true';
      await startWithCredentials(name, gateway, specs, withClaude, notices);
    } else {
      await engine.container.start(name);
    }
  }
  const report = await verifySandbox(id);
  await recordGate(id, 'start', report);
  if (!report.ok) {
    await engine.container.stop(name, { timeoutSeconds: 0 }).catch(() => undefined);
    throw new IsolationViolationError(
      name,
      report.checks.filter((check) => !check.pass),
    );
  }
  return { id, started: !running, report, notices };
}

/**
 * Starts a box whose gateway adds credentials: the gateway's CA (and its values, restored if it
 * lost them) first, then the box, whose tmpfs is new: its trust of that CA (and Claude Code's
 * state file) is written before anyone runs in it; a failure stops the box again.
 */
async function startWithCredentials(
  name: string,
  gateway: string,
  specs: CredentialSpec[],
  withClaude: boolean,
  notices: string[],
): Promise<void> {
  const ca = await gatewayCredentials(gateway, specs, notices);
  await engine.container.start(name);
  try {
    await writeBoxTrust(name, ca);
    if (gatewayHoldsClaudeKey(withClaude, specs)) await writeClaudeHome(name);
  } catch (error) {
    await engine.container.stop(name, { timeoutSeconds: 0 }).catch(() => undefined);
    throw error;
  }
}

/**
 * The CA of a credential box's gateway. A gateway that kept running since the create still holds
 * its values; one that started again (a reboot, a restart) made a new CA and lost them: they are
 * read again from where the create read them (this process's variables, the files), and one whose
 * source is gone is left out with a notice (its requests then go without it).
 */
async function gatewayCredentials(
  gateway: string,
  specs: CredentialSpec[],
  notices: string[],
): Promise<string> {
  const held = await readGatewayCa(gateway).catch(() => undefined);
  if (held?.loaded) return held.ca;
  const credentials: GatewayCredential[] = [];
  for (const spec of specs) {
    try {
      credentials.push(readCredential(spec));
    } catch (error) {
      notices.push(
        `${(error as Error).message}: its requests go without it (stop and start the sandbox again with its source readable)`,
      );
    }
  }
  return restoreCredentials(gateway, credentials, userCaPem());
}

/** Stops a box (its processes end; the volume, network and labels stay); `start` brings it back. */
export async function stopSandbox(id: string): Promise<StopResult> {
  const inspect = await inspectBox(id);
  if (!inspect.State.Running) return { id, stopped: false };
  // docker-init passes SIGTERM on; what exec started gets 2 s, then docker sends SIGKILL.
  await engine.container.stop(boxName(id), { timeoutSeconds: 2 });
  return { id, stopped: true };
}
