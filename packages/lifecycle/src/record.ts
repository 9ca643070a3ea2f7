import {
  formatToolchain,
  type InstallFallback,
  LABEL_TOOLCHAIN,
  parseInstallFallbacks,
  parseToolchain,
  type Toolchain,
} from '@ca-sandbox/build';

export { LABEL_CREDENTIALS };

import {
  type ContainerInspect,
  LABEL_CREATED,
  LABEL_ID,
  LABEL_POLICY,
  LABEL_REPO,
  LABEL_RUNTIME,
  RAW_REPO_DIR,
  REPO_DIR,
} from '@ca-sandbox/docker';
import { credentialsFromLabel, LABEL_CREDENTIALS } from './credentials.js';
import { type EgressSummaryRow, egressFromLabels } from './egress.js';
import { redactUserinfo } from './source.js';

/** The sandbox record of DESIGN.md (JSON of `create`, items of `list`). Read back from labels only. */
export interface SandboxRecord {
  id: string;
  container: string;
  volume: string;
  image: string;
  imageCacheHit: boolean;
  /** The source that built the deps image (a cache hit is only ever this box's own source); empty for a base image. */
  imageSource: string;
  dephash: string;
  builder: string;
  provider: string;
  /** False when the box got the bare toolchain image (offline without a cached deps image). */
  depsInstalled: boolean;
  /** Versions of the tools the box offers, e.g. { node: '22.23.5', npm: '10.9.9' }. */
  toolchain: Toolchain;
  /** The network policy. */
  network: string;
  runtime: string;
  repo: string;
  source: string;
  status: string;
  createdAt: string;
  /** What the clone and install reached or were refused through the egress gateway (refusals first). */
  egress: EgressSummaryRow[];
  /**
   * What an allowlist box may reach: the gateway's destinations (`api.anthropic.com:443`), or the
   * CIDRs of a firewall allowlist; empty for the other policies.
   */
  allow: string[];
  /** Claude Code is in the image (`--with-claude`; its version is in `toolchain.claude`). */
  withClaude: boolean;
  /**
   * What the deps install did besides its recipe, e.g. `npm-legacy-peer-deps` (npm refused the
   * tree with ERESOLVE and it installed again with --legacy-peer-deps); empty for most boxes.
   */
  installFallbacks: InstallFallback[];
  /**
   * Headers the box's gateway adds to its HTTPS requests (`--credential`): where, which header,
   * from which host source. Never a value: the box and its record never hold one.
   */
  credentials: { domain: string; header: string; source: string }[];
}

/** Where the source came from, as shown (any URL userinfo, user and password, is masked). */
export const LABEL_SOURCE = 'ca.sandbox.source';
/** One createSandbox call: what a failed or aborted create removes, and nothing else. */
export const LABEL_INSTANCE = 'ca.sandbox.instance';
export const LABEL_DEPHASH = 'ca.sandbox.dephash';
export const LABEL_BUILDER = 'ca.sandbox.builder';
export const LABEL_PROVIDER = 'ca.sandbox.provider';
export const LABEL_IMAGE_CACHE_HIT = 'ca.sandbox.image-cache-hit';
export const LABEL_DEPS_INSTALLED = 'ca.sandbox.deps-installed';
/** The source that built the box's deps image (the image's own `ca.sandbox.cache.source`). */
export const LABEL_IMAGE_SOURCE = 'ca.sandbox.image-source';
/**
 * Allowlist boxes, comma-joined, so `verify` can rebuild what must be enforced: the normalised
 * CIDRs of a firewall allowlist (the exact rule set), or the `--allow` entries of a gateway one
 * (the gateway's exact configuration).
 */
export const LABEL_ALLOW = 'ca.sandbox.allow';
/** Allowlist boxes through the egress gateway: its destinations as describeEgressRule shows them, space-joined. */
export const LABEL_EGRESS_ALLOW = 'ca.sandbox.egress-allow';
/** Boxes made with `--with-claude`. */
export const LABEL_WITH_CLAUDE = 'ca.sandbox.with-claude';
/** The install fallbacks of the box's deps image, comma-joined (absent: none). */
export const LABEL_INSTALL_FALLBACKS = 'ca.sandbox.install-fallbacks';
/** Gateway boxes whose gateway resolves pinned names (setting gatewayHosts): the pins, comma-joined. */
export const LABEL_GATEWAY_HOSTS = 'ca.sandbox.gateway-hosts';
/** Allowlist boxes: the blocked ranges their rules or gateway were built with (fixed plus the host's prefixes). */
export const LABEL_BLOCKED = 'ca.sandbox.blocked';

/** The box labels that carry the build's part of the record. */
export function sandboxRecordLabels(build: {
  imageCacheHit: boolean;
  dephash: string;
  builder: string;
  provider: string;
  depsInstalled: boolean;
  imageSource: string;
  toolchain: Toolchain;
  installFallbacks: readonly InstallFallback[];
}): Record<string, string> {
  return {
    ...(build.installFallbacks.length ? { [LABEL_INSTALL_FALLBACKS]: build.installFallbacks.join(',') } : {}),
    [LABEL_IMAGE_SOURCE]: build.imageSource,
    [LABEL_DEPHASH]: build.dephash,
    [LABEL_BUILDER]: build.builder,
    [LABEL_PROVIDER]: build.provider,
    [LABEL_IMAGE_CACHE_HIT]: String(build.imageCacheHit),
    [LABEL_DEPS_INSTALLED]: String(build.depsInstalled),
    [LABEL_TOOLCHAIN]: formatToolchain(build.toolchain),
  };
}

/** The record of a box container, from its inspect document (labels, image, state). */
export function recordFromInspect(inspect: ContainerInspect): SandboxRecord {
  const labels = inspect.Config.Labels;
  // A box with a repo view has its own volume at RAW_REPO_DIR (the view is at REPO_DIR).
  const own =
    inspect.Mounts.find((mount) => mount.Destination === RAW_REPO_DIR) ??
    inspect.Mounts.find((mount) => mount.Destination === REPO_DIR);
  const volume = own?.Name ?? '';
  return {
    id: labels[LABEL_ID] ?? '',
    container: inspect.Name.replace(/^\//, ''),
    volume,
    image: inspect.Config.Image,
    imageCacheHit: labels[LABEL_IMAGE_CACHE_HIT] === 'true',
    imageSource: redactUserinfo(labels[LABEL_IMAGE_SOURCE] ?? ''),
    dephash: labels[LABEL_DEPHASH] ?? '',
    builder: labels[LABEL_BUILDER] ?? '',
    provider: labels[LABEL_PROVIDER] ?? '',
    // Boxes made before the label existed said nothing: they had their deps unless told otherwise.
    depsInstalled: labels[LABEL_DEPS_INSTALLED] !== 'false',
    toolchain: parseToolchain(labels[LABEL_TOOLCHAIN]),
    network: labels[LABEL_POLICY] ?? '',
    runtime: labels[LABEL_RUNTIME] ?? '',
    repo: labels[LABEL_REPO] ?? '',
    // Boxes made before every userinfo was masked may still carry a token in the label.
    source: redactUserinfo(labels[LABEL_SOURCE] ?? ''),
    status: inspect.State.Status,
    createdAt: labels[LABEL_CREATED] ?? inspect.Created ?? '',
    egress: egressFromLabels(labels),
    allow: allowFromLabels(labels),
    withClaude: labels[LABEL_WITH_CLAUDE] === 'true',
    installFallbacks: parseInstallFallbacks(labels[LABEL_INSTALL_FALLBACKS]),
    credentials: credentialsFromLabel(labels[LABEL_CREDENTIALS]).map(({ domain, header, source }) => ({
      domain,
      header,
      source,
    })),
  };
}

/** The allow list of an allowlist box, from whichever label its enforcement wrote. */
function allowFromLabels(labels: Record<string, string>): string[] {
  const gateway = labels[LABEL_EGRESS_ALLOW];
  if (gateway !== undefined) return gateway.split(' ').filter(Boolean);
  return (labels[LABEL_ALLOW] ?? '').split(',').filter(Boolean);
}
