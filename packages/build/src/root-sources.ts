import type { Provider } from '@ca-sandbox/config';

/**
 * The source extensions that choose a toolchain for a repo root without any manifest, per
 * provider, in the order that breaks a tie (the order of detectProvider: node, python, go).
 */
export const ROOT_SOURCE_PROVIDERS = [
  { provider: 'node', extensions: ['js', 'mjs', 'cjs', 'ts'] },
  { provider: 'python', extensions: ['py'] },
  { provider: 'go', extensions: ['go'] },
] as const satisfies readonly { provider: Provider; extensions: readonly string[] }[];

export type RootSourceExtension = (typeof ROOT_SOURCE_PROVIDERS)[number]['extensions'][number];
export const ROOT_SOURCE_EXTENSIONS: readonly RootSourceExtension[] = ROOT_SOURCE_PROVIDERS.flatMap(
  (entry) => entry.extensions,
);

/** Regular files directly at the repo root per extension (an extension with none is absent). */
export type RootSourceCounts = Partial<Record<RootSourceExtension, number>>;

/** Starts the stderr line of the manifest read that carries the counts. */
export const ROOT_SOURCES_MARKER = 'ca-sbx-root-sources';
/**
 * The container cuts the token list here (`head -c`): at most ~5,000 files are counted, so a
 * root of a million files costs no more than a small one. Counts beyond it are not needed to
 * compare; a cut token is dropped.
 */
export const ROOT_SOURCES_MAX_BYTES = 20_000;

/**
 * The counts from the stderr line `ca-sbx-root-sources py py js ` (one token and a space per
 * file). Anything else (no marker, unknown or cut tokens) counts nothing.
 */
export function parseRootSourcesLine(line: string): RootSourceCounts {
  const counts: RootSourceCounts = {};
  if (!line.startsWith(`${ROOT_SOURCES_MARKER} `)) return counts;
  const tokens = line.slice(
    ROOT_SOURCES_MARKER.length + 1,
    ROOT_SOURCES_MARKER.length + 1 + ROOT_SOURCES_MAX_BYTES,
  );
  // Only tokens followed by their space are whole: the last one may be cut by the byte cap.
  const whole = tokens.split(' ').slice(0, -1);
  const known = new Set<string>(ROOT_SOURCE_EXTENSIONS);
  for (const token of whole) {
    if (!known.has(token)) continue;
    const ext = token as RootSourceExtension;
    counts[ext] = (counts[ext] ?? 0) + 1;
  }
  return counts;
}

/** Why a manifest-less root gets a toolchain: shown by `create`. */
export interface RootSourceChoice {
  provider: Provider;
  files: number;
  extensions: readonly RootSourceExtension[];
  /** `no manifest; 2 .py files at the root: the python toolchain image` */
  reason: string;
}

/**
 * The toolchain for a repo root without a manifest: the provider with the most source files at
 * the root; a tie goes to the first of node, python, go. undefined when there is none.
 */
export function chooseRootProvider(counts: RootSourceCounts): RootSourceChoice | undefined {
  let best: RootSourceChoice | undefined;
  for (const { provider, extensions } of ROOT_SOURCE_PROVIDERS) {
    const present = extensions.filter((ext) => (counts[ext] ?? 0) > 0);
    const files = present.reduce((sum, ext) => sum + (counts[ext] ?? 0), 0);
    if (files === 0 || (best && files <= best.files)) continue;
    const kinds = present.map((ext) => `.${ext}`).join('/');
    best = {
      provider,
      files,
      extensions: present,
      reason: `no manifest; ${files} ${kinds} file${files === 1 ? '' : 's'} at the root: the ${provider} toolchain image`,
    };
  }
  return best;
}
