import {
  engine,
  inspectContainer,
  LABEL_CREATED,
  LABEL_ID,
  LABEL_POLICY,
  LABEL_REPO,
  LABEL_ROLE,
  SANDBOX_LABEL,
  SANDBOX_LABEL_VALUE,
  sandboxNames,
} from '@ca-sandbox/docker';
import {
  assertInternalNetwork,
  describeComparison,
  egressNames,
  parseEgressRules,
  verifyFirewallRules,
} from '@ca-sandbox/network';
import {
  gatewayConfigMatches,
  type IsolationCheck,
  type IsolationReport,
  readGatewayLog,
  verifyContainer,
} from '@ca-sandbox/run';
import { boxName, mapLimit } from './_utils.js';
import { credentialsFromLabel } from './credentials.js';
import { type EgressSummaryRow, egressFromLabels, summariseDecisions } from './egress.js';
import { SandboxNotFoundError } from './errors.js';
import {
  LABEL_ALLOW,
  LABEL_BLOCKED,
  LABEL_CREDENTIALS,
  LABEL_GATEWAY_HOSTS,
  LABEL_SOURCE,
  recordFromInspect,
  type SandboxRecord,
} from './record.js';
import { redactUserinfo } from './source.js';

/**
 * Every sandbox, its record read from labels only: there is no state file to drift from the
 * engine. A box (role box) gives the full record; an id with objects but no box (a create still
 * running, or one that was killed: helper, volume or network left) is listed too, with status
 * `creating` while its helper or a build step runs and `incomplete` otherwise, and so is a box whose helper is
 * still there (started beside the clone by a create that has not returned, or was killed). Sorted
 * by creation time.
 */
export async function listSandboxes(): Promise<SandboxRecord[]> {
  const [containers, volumes, networks] = await Promise.all([
    labeledRows('container'),
    labeledRows('volume'),
    labeledRows('network'),
  ]);
  const boxes = containers.filter((row) => row.role === 'box').map((row) => row.name);
  const records = boxes.length > 0 ? await inspectBoxes(boxes) : [];
  // A box beside a helper is a create that has not returned (a box started beside the clone, or a
  // create killed meanwhile): a create removes its helper before it hands the box out.
  for (const record of records) {
    const helper = containers.find((row) => row.id === record.id && row.role === 'helper');
    if (helper) record.status = helper.state === 'running' ? 'creating' : 'incomplete';
  }
  const complete = new Set(records.map((record) => record.id));
  const partial = new Map<string, SandboxRecord>();
  for (const row of [...containers, ...volumes, ...networks]) {
    if (!row.id || complete.has(row.id)) continue;
    const known = partial.get(row.id);
    const record = known ?? partialRecord(row);
    // A build step's container carries the id only (its labels are the Dockerfile's): the other
    // rows name the repo, source, policy and time.
    if (known) fillFrom(record, row);
    if (row.kind === 'container' && row.role === 'helper') record.container = row.name;
    // A running helper clones, a running build step installs: the create is under way (or was
    // killed a moment ago and its step still runs).
    if (
      row.kind === 'container' &&
      (row.role === 'helper' || row.role === 'build') &&
      row.state === 'running'
    )
      record.status = 'creating';
    // The sandbox's own volume, not one of its views' (image or repo view, their upper and work).
    if (row.kind === 'volume' && row.name === sandboxNames(row.id).volume) record.volume = row.name;
    partial.set(row.id, record);
  }
  return [...records, ...partial.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** The status of an id that has objects but no box. */
export type PartialStatus = 'creating' | 'incomplete';

interface LabeledRow {
  kind: 'container' | 'volume' | 'network';
  name: string;
  id: string;
  role: string;
  state: string;
  policy: string;
  repo: string;
  source: string;
  created: string;
}

const ROW_LABELS = [LABEL_ID, LABEL_ROLE, LABEL_POLICY, LABEL_REPO, LABEL_SOURCE, LABEL_CREATED] as const;

/** Our objects of one kind with the labels a record needs, one `docker <kind> ls` each. */
async function labeledRows(kind: LabeledRow['kind']): Promise<LabeledRow[]> {
  const filter = { labels: [`${SANDBOX_LABEL}=${SANDBOX_LABEL_VALUE}`] };
  const items: { name: string; state: string; labels: Record<string, string> }[] =
    kind === 'container'
      ? await engine.container.list({ ...filter, all: true })
      : (await (kind === 'volume' ? engine.volume.list(filter) : engine.network.list(filter))).map(
          (item) => ({
            ...item,
            state: '-',
          }),
        );
  return items.map((item) => {
    const [id = '', role = '', policy = '', repo = '', source = '', created = ''] = ROW_LABELS.map(
      (label) => item.labels[label] ?? '',
    );
    return { kind, name: item.name, state: item.state, id, role, policy, repo, source, created };
  });
}

function partialRecord(row: LabeledRow): SandboxRecord {
  return {
    id: row.id,
    container: '',
    volume: '',
    image: '',
    imageCacheHit: false,
    imageSource: '',
    depsInstalled: false,
    toolchain: {},
    dephash: '',
    builder: '',
    provider: '',
    network: row.policy,
    runtime: '',
    repo: row.repo,
    source: redactUserinfo(row.source),
    status: 'incomplete' satisfies PartialStatus,
    createdAt: row.created,
    egress: [],
    allow: [],
    withClaude: false,
    installFallbacks: [],
    credentials: [],
  };
}

function fillFrom(record: SandboxRecord, row: LabeledRow): void {
  if (!record.repo) record.repo = row.repo;
  if (!record.source) record.source = redactUserinfo(row.source);
  if (!record.network) record.network = row.policy;
  if (!record.createdAt) record.createdAt = row.created;
}

async function inspectBoxes(names: string[]): Promise<SandboxRecord[]> {
  // A box removed between the two calls is missing from the answer: keep the rest.
  const inspected = await mapLimit(names, 8, (name) => engine.container.find(name));
  return inspected.filter((inspect) => inspect !== undefined).map(recordFromInspect);
}

/** Re-runs the isolation gate (run's verifyContainer) on the sandbox's box. */
export async function verifySandbox(id: string): Promise<IsolationReport & { running: boolean }> {
  const { report, running } = await verifyBox(id);
  return { ...report, running };
}

/** The checks of verifySandbox, and whether the box runs (a stopped one is checked as it would start). */
async function verifyBox(id: string): Promise<{ report: IsolationReport; running: boolean }> {
  const name = boxName(id);
  const inspect = await engine.container.find(name);
  if (!inspect || inspect.Config.Labels[LABEL_ID] !== id) throw new SandboxNotFoundError(id);
  const report = await verifyContainer(name, inspect);
  const running = inspect.State.Running === true;
  if (inspect.Config.Labels[LABEL_POLICY] !== 'allowlist') return { report, running };
  if (inspect.HostConfig.NetworkMode === egressNames(id).internal) {
    const checks = [await gatewayCheck(id), await gatewayRulesCheck(id, inspect.Config.Labels)];
    const ok = report.ok && checks.every((check) => check.pass);
    return { report: { ...report, ok, checks: [...report.checks, ...checks] }, running };
  }
  const check = await allowlistFirewallCheck(id, inspect.Config.Labels);
  return { report: { ...report, ok: report.ok && check.pass, checks: [...report.checks, check] }, running };
}

/**
 * An allowlist box is only as closed as its host firewall rules: the exact set must be there (a
 * host reboot or `iptables -F` removes them, one mistaken `-D` removes one; a count would not see
 * a missing DROP beside a stray rule). The set is rebuilt from the box's `ca.sandbox.allow` and
 * `ca.sandbox.blocked` labels (read from the box when `labels` is not given). `verify` reports
 * this row; `start` refuses to start an allowlist box without it.
 */
export async function allowlistFirewallCheck(
  id: string,
  labels?: Record<string, string>,
): Promise<IsolationCheck> {
  const own = labels ?? (await inspectContainer(boxName(id))).Config.Labels;
  const allow = own[LABEL_ALLOW];
  const blocked = own[LABEL_BLOCKED];
  const list = (text: string) => text.split(',').filter(Boolean);
  const rules =
    allow === undefined
      ? undefined
      : await verifyFirewallRules(id, list(allow), blocked === undefined ? undefined : list(blocked));
  return {
    id: 'allowlist-firewall',
    cis: '-',
    title: 'the exact egress rule set of the allowlist is in place on the host (IPv4 and IPv6)',
    expected: rules ? `${rules.expected} rule(s), in order` : 'the allow list in label ca.sandbox.allow',
    seen: !rules
      ? 'no ca.sandbox.allow label (box made by an older ca-sandbox): recreate it'
      : rules.ok
        ? `${rules.seen} rule(s), as expected`
        : `${rules.seen} rule(s): ${describeComparison(rules)}`,
    pass: rules?.ok === true,
  };
}

/**
 * What a sandbox's phases asked the egress gateway for: the clone's and the install's decisions
 * (kept in the box's labels, their gateway is gone), then a live gateway's (an allowlist box's).
 */
export async function egressLog(id: string): Promise<EgressSummaryRow[]> {
  const name = boxName(id);
  const inspect = await engine.container.find(name);
  if (!inspect || inspect.Config.Labels[LABEL_ID] !== id) throw new SandboxNotFoundError(id);
  // A live gateway (an allowlist box's) also served the clone and install: their lines are older
  // than the box and already in its labels.
  const since = inspect.Created ?? '';
  const live = summariseDecisions(
    (await readGatewayLog(id))
      .filter((entry) => entry.time >= since)
      .map((entry) => ({ ...entry, phase: 'box' })),
  );
  return [...egressFromLabels(inspect.Config.Labels), ...live];
}

/**
 * The gateway an allowlist box goes through: it must be running and pass its own isolation gate,
 * or the box has no way out at all (fail closed) but is not what its record says.
 */
async function gatewayCheck(id: string): Promise<IsolationCheck> {
  const { gateway, internal } = egressNames(id);
  const inspect = await engine.container.find(gateway).catch(() => undefined);
  const report = inspect ? await verifyContainer(gateway, inspect).catch(() => undefined) : undefined;
  const running = inspect?.State.Running === true;
  const failed = report?.checks.filter((check) => !check.pass).map((check) => check.id) ?? [];
  const networkOk = await assertInternalNetwork(internal).then(
    () => true,
    () => false,
  );
  if (!networkOk) failed.push('internal-network');
  let seen = 'missing';
  if (report && !running) seen = 'stopped';
  else if (report) seen = failed.length ? `failing: ${failed.join(',')}` : 'running, all checks pass';
  return {
    id: 'allowlist-gateway',
    cis: '-',
    title: 'the allowlist gateway runs and passes its own checks; the box network is internal',
    expected: `${gateway} running, all checks pass; ${internal} internal, no host address, no IPv6`,
    seen,
    pass: Boolean(report?.ok) && running && networkOk,
  };
}

/**
 * The gateway of an allowlist box enforces exactly the box's list: its live configuration is the
 * one rendered from the box's `ca.sandbox.allow` and `ca.sandbox.blocked` labels (a gateway
 * restarted with another phase's rules, or whose configuration was rewritten, fails).
 */
export async function gatewayRulesCheck(id: string, labels: Record<string, string>): Promise<IsolationCheck> {
  const allow = labels[LABEL_ALLOW];
  const blocked = labels[LABEL_BLOCKED];
  const list = (text: string) => text.split(',').filter(Boolean);
  let seen = 'no ca.sandbox.allow or ca.sandbox.blocked label (box made by an older ca-sandbox): recreate it';
  let pass = false;
  if (allow !== undefined && blocked !== undefined) {
    let rules: ReturnType<typeof parseEgressRules> | undefined;
    try {
      rules = parseEgressRules(list(allow));
    } catch {
      seen = 'the ca.sandbox.allow label does not parse';
    }
    const credentials = credentialsFromLabel(labels[LABEL_CREDENTIALS]).map(({ domain, header }) => ({
      domain,
      header,
    }));
    if (rules)
      ({ ok: pass, seen } = await gatewayConfigMatches(id, {
        rules,
        blocked: list(blocked),
        hostsFile: Boolean(labels[LABEL_GATEWAY_HOSTS]),
        ...(credentials.length ? { credentials } : {}),
      }));
  }
  return {
    id: 'allowlist-gateway-rules',
    cis: '-',
    title: "the allowlist gateway's live configuration is exactly the box's allow list",
    expected:
      'the rules rendered from labels ca.sandbox.allow and ca.sandbox.blocked (and its credential domains and pinned names)',
    seen,
    pass,
  };
}
