/** Every container, volume and network we create carries `ca.sandbox=1`. */
export const SANDBOX_LABEL = 'ca.sandbox';
export const SANDBOX_LABEL_VALUE = '1';
export const LABEL_ID = 'ca.sandbox.id';
export const LABEL_REPO = 'ca.sandbox.repo';
export const LABEL_POLICY = 'ca.sandbox.policy';
export const LABEL_CREATED = 'ca.sandbox.created';
/** What a container is for: `box` (the sandbox itself) or `helper` (clone, manifests). */
export const LABEL_ROLE = 'ca.sandbox.role';
export const LABEL_RUNTIME = 'ca.sandbox.runtime';
export const LABEL_NETWORK = 'ca.sandbox.network';
/**
 * The environment names the caller set on a container (comma-separated), so a later `verify` knows
 * which proxy variables were asked for rather than injected by the docker client.
 */
export const LABEL_ALLOWED_ENV = 'ca.sandbox.allowed-env';
/** The resolver choice a container was started with (`default` or `blackhole`), for the gate. */
export const LABEL_DNS = 'ca.sandbox.dns';
/** Networks a container may join besides its `--network` (a gateway's internal network). */
export const LABEL_EXTRA_NETWORKS = 'ca.sandbox.extra-networks';

/** `--filter` value that selects everything we own. */
export const SANDBOX_FILTER = `label=${SANDBOX_LABEL}=${SANDBOX_LABEL_VALUE}`;

/** Dependency images are a cache: labeled apart so teardown never selects them. */
export const CACHE_LABEL = 'ca.sandbox.cache';
export const CACHE_LABEL_DEPHASH = 'ca.sandbox.cache.dephash';
export const CACHE_LABEL_REPO = 'ca.sandbox.cache.repo';
/** The source whose install a cache image holds (URL without credentials, or a local realpath). */
export const CACHE_LABEL_SOURCE = 'ca.sandbox.cache.source';
export const CACHE_IMAGE_REPOSITORY = 'ca-sbx';
/**
 * Set by the first instruction of every deps Dockerfile, so each intermediate image and build
 * container carries it: what a failed or killed build leaves is recognisable as ours (boxes run
 * from a cache image inherit it too; they also carry `ca.sandbox=1`).
 */
export const BUILD_LABEL = 'ca.sandbox.build';
export const BUILD_LABEL_REPO = 'ca.sandbox.build.repo';
export const BUILD_LABEL_DEPHASH = 'ca.sandbox.build.dephash';
/**
 * On a deps image whose top layer is a node install of the built-in recipe (it always leaves
 * /deps/src/node_modules): that layer's /deps/src (what the install wrote, and only that) can lie
 * under the checkout as the lower of a box's repo view (repo-view.ts), as the install would have
 * left the project on a developer's machine.
 */
export const LABEL_DEPS_VIEW = 'ca.sandbox.cache.deps-view';
/** The builder that made a deps image (`builtin`, `nixpacks`): only the built-in one checks its layer. */
export const LABEL_CACHE_BUILDER = 'ca.sandbox.cache.builder';
/**
 * The value LABEL_DEPS_VIEW must have: images whose install step ended by checking that /deps/src
 * is a directory of its own, not a link (dockerfile.ts DEPS_SRC_IS_A_DIRECTORY). The kernel
 * resolves the overlay's lowerdir on the host: a link there would name a host path. Images labeled
 * before that check (value 1) get no repo view.
 */
export const DEPS_VIEW_LABEL_VALUE = '2';

/** The filter for one sandbox's objects. */
export function sandboxIdFilter(id: string): string {
  return `label=${LABEL_ID}=${id}`;
}

/**
 * The labels of a `docker build` run for sandbox `id` (set by the Dockerfile's first instruction):
 * the legacy builder's step containers take them, so `ls`, `destroy <id>` and `prune` see and stop
 * the install of a create that was killed (a running step also holds the sandbox's network).
 */
export function buildStepLabels(id: string): Record<string, string> {
  return sandboxLabels(id, { [LABEL_ROLE]: 'build' });
}

/**
 * True for the labels of a container a build may have made: none of a sandbox's, or the
 * sandbox's with role `build` (buildStepLabels). A box carries its cache image's build labels by
 * inheritance, but role `box`: never taken for a build step (callers also match the build's id
 * and RUN lines).
 */
export function mayBeBuildStep(labels: Readonly<Record<string, string>>): boolean {
  // '' is a cache image's UNOWNED_IMAGE_LABELS, inherited: no sandbox's either.
  return !labels[SANDBOX_LABEL] || labels[LABEL_ROLE] === 'build';
}

/**
 * Set on the image a buildStepLabels build makes: a cache image belongs to no sandbox (boxes set
 * their own), and a container started from it without labels is not taken for one of `id`'s.
 */
export const UNOWNED_IMAGE_LABELS: Readonly<Record<string, string>> = {
  [SANDBOX_LABEL]: '',
  [LABEL_ID]: '',
  [LABEL_ROLE]: '',
};

/** `key=value` pairs selecting one sandbox's objects, as listLabeled takes them. */
export function sandboxLabelPairs(id: string): string[] {
  return [`${SANDBOX_LABEL}=${SANDBOX_LABEL_VALUE}`, `${LABEL_ID}=${id}`];
}

/** The labels every object of sandbox `id` gets, plus any extra ones (which cannot override ours). */
export function sandboxLabels(id: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...extra, [SANDBOX_LABEL]: SANDBOX_LABEL_VALUE, [LABEL_ID]: id };
}

/** `--label k=v` pairs for an argv. */
export function labelArgs(labels: Record<string, string>): string[] {
  return Object.entries(labels).flatMap(([key, value]) => ['--label', `${key}=${value}`]);
}
