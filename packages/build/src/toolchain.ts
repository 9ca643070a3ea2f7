/**
 * The versions of the tools an image offers (node, npm, pnpm, python, uv, go, ...): probed at the
 * end of every dependency build, carried by the image as a label, and by the box (lifecycle) so the
 * sandbox record says what the repo ran with. scripts/seed-images.sh labels the base images with
 * the same probe and format.
 */
export const LABEL_TOOLCHAIN = 'ca.sandbox.toolchain';
/** Marks the probe's line in the build output. */
export const TOOLCHAIN_MARKER = 'ca-sbx-toolchain:';

export type Toolchain = Record<string, string>;

const TOOLS = 'node npm corepack pnpm yarn python3 pip uv go gcc';

/** One tool's version, as `v` (sh): each tool is asked the way that gives a bare version. */
const VERSION_OF = [
  '  case $t in',
  '    go) v=$(go env GOVERSION 2>/dev/null | sed s/^go//) ;;',
  '    pip) v=$(python3 -m pip --version 2>/dev/null | cut -d" " -f2) ;;',
  '    python3) v=$(python3 -c "import platform; print(platform.python_version())") ;;',
  '    gcc) v=$(gcc -dumpfullversion 2>/dev/null) ;;',
  '    *) v=$("$t" --version 2>/dev/null | head -n 1 | sed -e "s/^v//" -e "s/^[^0-9]*//" -e "s/ .*//") ;;',
  '  esac',
];

/**
 * sh: one marked line of `name=version,` per tool on PATH; run from / so no repo-local config picks
 * a version. The tools are asked in parallel (each a node or python start: sequentially about a
 * second on a node image), each into a file of its own, and the line is written in TOOLS order.
 * `extra` are lines that print more pairs before the line ends (the Claude Code version).
 */
export function toolchainProbe(extra: readonly string[] = []): string {
  return [
    'set +e',
    'cd /',
    'ca_sbx_probe=$(mktemp -d)',
    'ca_sbx_jobs=',
    `for t in ${TOOLS}; do`,
    '  command -v "$t" >/dev/null 2>&1 || continue',
    '  (',
    ...VERSION_OF.map((line) => `  ${line}`),
    '    [ -n "$v" ] && printf "%s=%s," "$t" "$v" > "$ca_sbx_probe/$t"',
    '  ) &',
    '  ca_sbx_jobs="$ca_sbx_jobs $!"',
    'done',
    // Its own jobs only: a bare `wait` would wait for any other child of the shell too.
    '[ -z "$ca_sbx_jobs" ] || wait $ca_sbx_jobs',
    `printf '%s' '${TOOLCHAIN_MARKER}'`,
    `for t in ${TOOLS}; do if [ -f "$ca_sbx_probe/$t" ]; then cat "$ca_sbx_probe/$t"; fi; done`,
    ...extra,
    'echo',
    'rm -rf "$ca_sbx_probe"',
  ].join('\n');
}

/** The probe of an image without add-ons. */
export const TOOLCHAIN_PROBE = toolchainProbe();

const NAME = /^[a-z][a-z0-9]{0,15}$/;
const VERSION = /^[0-9][0-9A-Za-z.+~-]{0,39}$/;
const MAX_TOOLS = 16;

/** `node=22.1.0,npm=10.9.9` → { node: '22.1.0', npm: '10.9.9' }; anything malformed is dropped. */
export function parseToolchain(text: string | undefined): Toolchain {
  const out: Toolchain = {};
  for (const pair of (text ?? '').split(',').slice(0, MAX_TOOLS)) {
    const [name, version, ...rest] = pair.trim().split('=');
    if (rest.length === 0 && name && version && NAME.test(name) && VERSION.test(version)) out[name] = version;
  }
  return out;
}

export function formatToolchain(toolchain: Toolchain): string {
  return Object.entries(toolchain)
    .map(([name, version]) => `${name}=${version}`)
    .join(',');
}

/**
 * The probe's result from build output lines: the LAST marked line, validated like any label
 * value. The probe runs after the install (in its step, once every process of the install has been
 * killed; see dockerfile.ts), so an install script's own marker line comes earlier; what the repo
 * can still do (a tool of its deps on PATH answering any version) yields validated pairs only.
 */
export function toolchainFromOutput(lines: readonly string[]): Toolchain {
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] ?? '';
    if (line.startsWith(TOOLCHAIN_MARKER)) return parseToolchain(line.slice(TOOLCHAIN_MARKER.length));
  }
  return {};
}
