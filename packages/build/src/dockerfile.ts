import { posix } from 'node:path';
import {
  BOX_USER,
  CONFINEMENT_PROBE,
  confinementGuard,
  DEPS_DIR,
  DEPS_SRC,
  DOCKER_CLI_PROXY_VARIABLES,
  ENV_NAME_PATTERN,
  INSTALL_PID1,
  type ProcessLimits,
  REPO_DIR,
} from '@ca-sandbox/docker';
import { hasControlCharacter, InvariantError } from '@ca-sandbox/docker/contracts';
import { shellQuote } from './_utils.js';
import { ImageRefSchema } from './base-image.js';
import { CA_BUNDLE_SCRIPT, CA_COPY_LINE, CA_TRUST_ENV } from './ca-trust.js';
import { CLAUDE_CODE_BIN, CLAUDE_CODE_ENV, CLAUDE_CODE_STAGE_BINARY } from './claude-code-pin.js';
import { INSTALL_SCRIPTS_SCAN } from './install-scripts.js';
import { unsafePathReason } from './manifest-names.js';
import type { EnvEntry, InstallRecipe } from './recipe.js';
import { toolchainProbe } from './toolchain.js';

/** The build context folder that holds the manifests (nothing else is copied). */
export const CONTEXT_MANIFESTS = 'manifests';

/** A Dockerfile ENV value in double quotes; without `expand`, `$` is escaped (no substitution). */
export function envValue(entry: EnvEntry): string {
  if (hasControlCharacter(entry.value)) throw new InvariantError(`env ${entry.name} has a control character`);
  let value = entry.value.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
  if (!entry.expand) value = value.replace(/\$/g, '\\$');
  return `"${value}"`;
}

/**
 * ENV instructions for the entries, in order, as few as keep their meaning: the legacy builder
 * makes a container and commits an image for every instruction, a metadata one too. One
 * instruction substitutes the values from before it, so an entry that expands a variable set
 * earlier in the same instruction (a second PATH on top of the first), or sets a name again,
 * starts a new instruction.
 */
export function envLines(entries: readonly EnvEntry[]): string[] {
  const groups: EnvEntry[][] = [];
  for (const entry of entries) {
    if (!ENV_NAME_PATTERN.test(entry.name))
      throw new InvariantError(`invalid env name ${JSON.stringify(entry.name)}`);
    const group = groups.at(-1);
    const clash = group?.some(
      (earlier) =>
        earlier.name === entry.name || (entry.expand === true && readsVariable(entry.value, earlier.name)),
    );
    if (group && !clash) group.push(entry);
    else groups.push([entry]);
  }
  return groups.map((group) => `ENV ${group.map((entry) => `${entry.name}=${envValue(entry)}`).join(' ')}`);
}

/** Whether a value substitutes `$name` or `${name...}` (names are ENV_NAME_PATTERN: no regex syntax). */
function readsVariable(value: string, name: string): boolean {
  return new RegExp(`\\$(\\{${name}\\b|${name}\\b)`).test(value);
}

/**
 * The install step trusts the user's CA bundle (baked root's into the prep image, see
 * renderPrepDockerfile) through the same variables as the box (CA_TRUST_ENV).
 */
export const EXTRA_CA_SETUP = shellEnv(
  Object.entries(CA_TRUST_ENV).map(([name, value]) => ({ name, value })),
);

export interface RenderOptions {
  /** The prep image holds the user's CA bundle (see renderPrepDockerfile): the install trusts it. */
  extraCa?: boolean;
  /**
   * The build's limits: the step stops before the install unless it sees itself under them
   * (confinementGuard). Always given by a build; a rendering without them has no guard.
   */
  limits?: ProcessLimits;
  /**
   * The source key (hex, see tag.ts): written into the install step, so docker's layer cache,
   * keyed by the instruction text, never hands one source's install layer to another source
   * with the same manifests.
   */
  sourceKey?: string;
  /**
   * A fresh id of this build, as the label LABEL_BUILD_ID on every image the build makes: after a
   * failed build, exactly its intermediate images are found by it and removed.
   */
  buildId?: string;
  /**
   * Labels set by the Dockerfile's first instruction, so that every intermediate image and build
   * container carries them (docker build's own `--label`s land on the final image only).
   */
  buildLabels?: Record<string, string>;
  /**
   * The image being built: named in the install step, so that its RUN line (by which a stopped
   * build's containers are found and removed) differs from other repos' concurrent builds.
   */
  image?: string;
  /**
   * The Claude Code image (`--with-claude`): its binary is copied to CLAUDE_CODE_BIN in a root step
   * before the install (owned by root, not writable by the box user), and the probe must run it.
   */
  claudeImage?: string;
  /**
   * The image's install layer will be the lower of a box's repo view (its /deps/src): the step
   * ends, after everything of the repo's was killed, by checking that /deps/src is a directory of
   * its own (DEPS_SRC_IS_A_DIRECTORY).
   */
  depsViewLower?: boolean;
}

/** Labels every image (intermediate ones too) of one `docker build`: see RenderOptions.buildId. */
export const LABEL_BUILD_ID = 'ca.sandbox.cache.build';

/** The install step runs under this, so no setuid or file-capability binary can raise its privileges. */
export const NO_NEW_PRIVS = ['/usr/bin/setpriv', '--no-new-privs', '--'] as const;

/**
 * Root step before the install and the probe: setuid/setgid bits go (a setuid helper in the base could otherwise
 * give the install root, and the box gets no use of them either), and setpriv must be there.
 */
const STRIP_SETUID =
  'find / -xdev -type f \\( -perm -4000 -o -perm -2000 \\) -exec chmod ug-s {} + && ' +
  `{ [ -x ${NO_NEW_PRIVS[0]} ] || { echo 'ca-sandbox: the base image has no ${NO_NEW_PRIVS[0]} (util-linux): the install step cannot be run without new privileges' >&2; exit 1; }; }` +
  ` && { [ -x ${INSTALL_PID1[0]} ] || { echo 'ca-sandbox: the base image has no ${INSTALL_PID1[0]} (coreutils): the install container cannot be held' >&2; exit 1; }; }`;

/** The prep image's root step: the deps and repo folders (1000's), then the setuid strip. */
export const PREP_SCRIPT = `mkdir -p ${DEPS_SRC} ${REPO_DIR} && chown ${BOX_USER} ${DEPS_DIR} ${DEPS_SRC} ${REPO_DIR} && ${STRIP_SETUID}`;

/**
 * The prep image of a base (see prep-image.ts): the root step every deps image needs, built once
 * per base image and shared by every deps build FROM it. Its own build id labels its steps (a
 * failed prep build is removed by it); the deps build's LABEL overrides the build labels.
 */
export function renderPrepDockerfile(
  baseImage: string,
  buildLabels: Record<string, string>,
  options: { extraCa?: boolean } = {},
): string {
  if (!ImageRefSchema.safeParse(baseImage).success)
    throw new InvariantError(`invalid base image ${JSON.stringify(baseImage.slice(0, 100))}`);
  return [
    `FROM ${baseImage}`,
    ...labelLine(buildLabels),
    'USER 0:0',
    // The user's CA bundle (its context holds extra-ca.pem), root's, in the same root step.
    ...(options.extraCa
      ? [CA_COPY_LINE, runLine(`${PREP_SCRIPT} && ${CA_BUNDLE_SCRIPT}`)]
      : [runLine(PREP_SCRIPT)]),
    // The box starts here; the install step `cd`s into /deps/src itself (a WORKDIR is a step).
    `WORKDIR ${REPO_DIR}`,
    '',
  ].join('\n');
}

const LABEL_PART = /^[a-z0-9][a-z0-9._-]{0,127}$/;

/**
 * Exec-form RUN: the script is a JSON string on one line, so no content can start a new instruction.
 * `prefix` goes before the shell (the install step's no-new-privileges wrapper).
 */
export function runLine(script: string, prefix: readonly string[] = []): string {
  return `RUN ${JSON.stringify([...prefix, '/bin/sh', '-c', script])}`;
}

function labelLine(labels: Record<string, string>): string[] {
  const entries = Object.entries(labels);
  if (entries.length === 0) return [];
  for (const [key, value] of entries)
    if (!LABEL_PART.test(key) || !LABEL_PART.test(value))
      throw new InvariantError(`invalid build label ${JSON.stringify(`${key}=${value}`.slice(0, 100))}`);
  return [`LABEL ${entries.map(([key, value]) => `${key}=${value}`).join(' ')}`];
}

export function shellEnv(entries: readonly EnvEntry[]): string[] {
  return entries.map((entry) => {
    if (!ENV_NAME_PATTERN.test(entry.name))
      throw new InvariantError(`invalid env name ${JSON.stringify(entry.name)}`);
    return `export ${entry.name}='${entry.value.replace(/'/g, `'\\''`)}'`;
  });
}

/** The image keeps nothing a step left in /tmp (the box mounts a tmpfs there anyway). */
const CLEAN_TMP = 'find /tmp -mindepth 1 -maxdepth 1 -user "$(id -u)" -exec rm -rf {} + 2>/dev/null || true';

/**
 * yarn 2+ reads no proxy variable: it gets the egress gateway the build was given (the predefined
 * HTTP(S)_PROXY build args, empty when the install runs without a gateway).
 */
const YARN_PROXY =
  'if [ -n "${HTTPS_PROXY:-}" ]; then export YARN_HTTPS_PROXY="$HTTPS_PROXY" YARN_HTTP_PROXY="${HTTP_PROXY:-$HTTPS_PROXY}"; fi';

/**
 * Every process the install left running (a daemon an install script started) is killed before
 * the toolchain probe: `kill -1` spares PID 1 of the install container (INSTALL_PID1, which holds
 * it) and the shell that sends it, and the install runs as the same unprivileged user in that PID
 * namespace, so it reaches every other process. Nothing of the install can then print after the
 * probe's marked line.
 */
export const END_INSTALL_PROCESSES = 'kill -KILL -1 2>/dev/null || :';

/**
 * The image's /work/repo left empty, as the prep step made it (1000's: a new volume takes its
 * owner from it). The install runs as 1000 and may write there; the engine copies an image's
 * directory into an empty volume at its first mount, and a box started beside the clone (from
 * the source's last deps image) mounts the new volume before the helper wrote the checkout:
 * what the install left would join the checkout, or fail a git clone ("destination path already
 * exists"). After a second kill: the probe runs the deps' tools, which could leave a process.
 * A directory it cannot empty fails the step.
 */
const CLEAN_REPO_DIR = [
  END_INSTALL_PROCESSES,
  // `command -p`: the system's tools, never a dependency's bin of the same name (PATH starts
  // with /deps bins).
  `command -p chmod -R u+rwX ${REPO_DIR} 2>/dev/null || :`,
  `command -p find ${REPO_DIR} -mindepth 1 -delete`,
  `command -p chmod 0755 ${REPO_DIR}`,
  `[ -z "$(command -p ls -A ${REPO_DIR})" ] || { echo 'ca-sandbox: the install left files in ${REPO_DIR} that could not be removed' >&2; exit 1; }`,
].join('\n');

/**
 * The last line of an install whose layer a repo view mounts (@ca-sandbox/docker repo-view): the
 * kernel resolves the overlay's lowerdir, `<layer>/deps/src`, on the host, so a link the install
 * (or a dependency's bin the probe ran) put there would name a host path. After the final kill
 * nothing of the repo's runs; `[` is the shell's own builtin. A link, or anything but a
 * directory, fails the build here; the build then checks again from outside the step
 * (deps-view-check.ts: a process of the step could have tampered with this shell).
 */
export const DEPS_SRC_IS_A_DIRECTORY = `[ -d ${DEPS_DIR} ] && [ ! -L ${DEPS_DIR} ] && [ -d ${DEPS_SRC} ] && [ ! -L ${DEPS_SRC} ] || { echo 'ca-sandbox: ${DEPS_SRC} is not a directory of its own after the install (a link?)' >&2; exit 1; }`;

/**
 * Claude Code's version, asked before any code of the repo runs (by absolute path: a `claude` of
 * the repo's deps earlier on PATH is not it): the build fails at once, with this line as its
 * cause, when the binary does not run on the base (a musl base, say).
 */
const CLAUDE_VERSION = [
  `ca_sbx_claude=$(${CLAUDE_CODE_BIN} --version 2>/dev/null | head -n 1 | sed -e "s/^[^0-9]*//" -e "s/ .*//")`,
  `[ -n "$ca_sbx_claude" ] || { echo 'ca-sandbox: Claude Code (${CLAUDE_CODE_BIN}) does not run on this base image' >&2; exit 1; }`,
];
/** The probe's extra pair for it (see toolchainProbe). */
const CLAUDE_PAIR = 'printf "%s=%s," claude "$ca_sbx_claude"';

/** The build's toolchain probe: with Claude Code, its version (checked earlier) joins the line. */
/** The step's first lines: its confinement printed, then checked (when the build's limits are known). */
function confinement(options: RenderOptions): string[] {
  return [CONFINEMENT_PROBE, ...(options.limits ? [confinementGuard(options.limits)] : [])];
}

function probe(options: RenderOptions): string {
  return toolchainProbe(options.claudeImage ? [CLAUDE_PAIR] : []);
}

/**
 * The install step's script: strict shell in /deps/src, the builder's lines in a subshell (their
 * exports stay there), every process they left killed, the toolchain probe, the scratch space
 * emptied.
 *
 * The probe shares the install's step (a step of its own cost ~4 s: a container, a commit and a
 * second node start of every tool) and stays as trustworthy: no process of the install outlives
 * END_INSTALL_PROCESSES, so no install output follows the probe's line, which is the last marked
 * one (toolchainFromOutput). What the repo could do before (a tool of its deps first on PATH
 * answering any version) it still can, and the label holds validated `name=version` pairs only
 * (parseToolchain). A failed install never reaches the probe: the error's details are the
 * install's lines, as before.
 */
export function installScript(
  recipe: InstallRecipe,
  options: RenderOptions = {},
  proxies: readonly string[] = [],
): string {
  if (options.sourceKey !== undefined && !/^[0-9a-f]{1,64}$/.test(options.sourceKey))
    throw new InvariantError('invalid source key');
  if (options.image !== undefined && !/^[a-z0-9][a-z0-9._:-]{0,200}$/.test(options.image))
    throw new InvariantError(`invalid image name ${JSON.stringify(options.image.slice(0, 100))}`);
  return [
    ...(options.sourceKey ? [`# ca-sbx source ${options.sourceKey}`] : []),
    'set -eu',
    ...proxies,
    // First, before anything of the repo's runs: what the step sees of its own confinement.
    ...confinement(options),
    ...(options.image ? [`: ca-sandbox install for ${options.image}`] : []),
    ...(options.claudeImage ? CLAUDE_VERSION : []),
    `cd ${DEPS_SRC}`,
    '(',
    YARN_PROXY,
    ...(options.extraCa ? EXTRA_CA_SETUP : []),
    ...shellEnv(recipe.installEnv),
    ...recipe.install,
    ')',
    END_INSTALL_PROCESSES,
    ...(recipe.afterInstall ?? []),
    INSTALL_SCRIPTS_SCAN,
    probe(options),
    CLEAN_TMP,
    CLEAN_REPO_DIR,
    ...removeMadeUp(recipe.madeUpFiles ?? []),
    ...(options.depsViewLower ? [DEPS_SRC_IS_A_DIRECTORY] : []),
  ].join('\n');
}

/**
 * The context's own stand-ins (InstallRecipe.madeUpFiles) go once the install is done, with the
 * folders made only for them: in the install's layer (a repo view's lower) an empty stand-in for a
 * bin the repo builds would show under /work/repo and run as an empty file. `command -p`: the
 * system's tools (nothing of the repo's runs any more). Paths are the context's, checked.
 */
function removeMadeUp(paths: readonly string[]): string[] {
  if (paths.length === 0) return [];
  for (const path of paths)
    if (unsafePathReason(path))
      throw new InvariantError(`unsafe context path ${JSON.stringify(path.slice(0, 100))}`);
  const quoted = paths.map(shellQuote).join(' ');
  const parents = [...new Set(paths.map((path) => posix.dirname(path)).filter((dir) => dir !== '.'))];
  return [
    `(cd ${DEPS_SRC} && command -p rm -f -- ${quoted}${parents.length ? ` && command -p rmdir -p --ignore-fail-on-non-empty -- ${parents.map(shellQuote).join(' ')}` : ''}) 2>/dev/null || :`,
  ];
}

/**
 * The deps image's Dockerfile up to its install, FROM the base's prep image (renderPrepDockerfile:
 * /deps/src and /work/repo made, setuid bits stripped, WORKDIR /work/repo): the context is the
 * manifests alone, copied to /deps/src, then the install user and the image's ENV. It runs
 * nothing of the repo's (no RUN): the install is a container of this image (installCommand, run by
 * run-install.ts), whose layer is committed as the deps image. The image runs as 1000:1000 with
 * HOME on the tmpfs. No ARG, no host value.
 */
export function renderDockerfile(
  prepImage: string,
  recipe: InstallRecipe,
  options: RenderOptions = {},
): string {
  if (!ImageRefSchema.safeParse(prepImage).success)
    throw new InvariantError(`invalid base image ${JSON.stringify(prepImage.slice(0, 100))}`);
  if (options.buildId !== undefined && !/^[0-9a-f]{8,64}$/.test(options.buildId))
    throw new InvariantError('invalid build id');
  if (options.claudeImage !== undefined && !ImageRefSchema.safeParse(options.claudeImage).success)
    throw new InvariantError(
      `invalid Claude Code image ${JSON.stringify(options.claudeImage.slice(0, 100))}`,
    );
  const lines = [
    `FROM ${prepImage}`,
    ...labelLine({
      ...(options.buildId ? { [LABEL_BUILD_ID]: options.buildId } : {}),
      ...(options.buildLabels ?? {}),
    }),
    `COPY --chown=${BOX_USER} ${CONTEXT_MANIFESTS}/ ${DEPS_SRC}/`,
    // Root's, explicitly (COPY --from keeps the source's owner, 1000 there): the install step and
    // the box run as 1000 and must not be able to replace the binary that will read the API key.
    ...(options.claudeImage
      ? [`COPY --from=${options.claudeImage} --chown=0:0 ${CLAUDE_CODE_STAGE_BINARY} ${CLAUDE_CODE_BIN}`]
      : []),
    `USER ${BOX_USER}`,
    // The box reaches the API alone: no update check, telemetry or error reports to try (and fail).
    ...envLines([...recipe.env, ...(options.claudeImage ? CLAUDE_CODE_ENV : [])]),
  ];
  lines.push('');
  return lines.join('\n');
}

/**
 * The proxy variables of the install (the docker CLI's set, see @ca-sandbox/docker): HTTP(S) name
 * the egress gateway, the rest are empty. Exported by the step itself, never the container's Env:
 * a commit keeps the container's Env in the image.
 */
function proxyExports(proxyUrl: string | undefined): string[] {
  return shellEnv(
    DOCKER_CLI_PROXY_VARIABLES.map((name) => ({
      name,
      value: proxyUrl && /^https?_proxy$/i.test(name) ? proxyUrl : '',
    })),
  );
}

/**
 * The install's command (an exec in its container): the step's script under no-new-privileges (setpriv: no setuid
 * or file-capability binary raises the privileges of anything it runs; the engine's
 * no-new-privileges holds as well). Every step that runs the repo's code (the install, and the
 * probe: it runs the toolchain found on the image's PATH, /deps bins first) is this one; without
 * an install the probe is the step.
 */
export function installCommand(
  recipe: InstallRecipe,
  options: RenderOptions & { proxyUrl?: string } = {},
): string[] {
  if (options.proxyUrl !== undefined && !/^http:\/\/[A-Za-z0-9.-]{1,200}:[0-9]{1,5}$/.test(options.proxyUrl))
    throw new InvariantError(`invalid proxy ${JSON.stringify(options.proxyUrl.slice(0, 100))}`);
  const proxies = proxyExports(options.proxyUrl);
  const step =
    recipe.install.length > 0
      ? installScript(recipe, options, proxies)
      : [
          ...proxies,
          ...confinement(options),
          ...(options.claudeImage ? CLAUDE_VERSION : []),
          probe(options),
          CLEAN_TMP,
        ].join('\n');
  // One stream, in the order written (the legacy builder merged them too): a line the repo leaves
  // unterminated on one stream cannot arrive after the probe's marked line on the other.
  const script = `exec 2>&1\n${step}`;
  return [...NO_NEW_PRIVS, '/bin/sh', '-c', script];
}
