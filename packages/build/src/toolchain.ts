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

/** sh: `name=version,` per tool on PATH; run from / so no repo-local config picks a version. */
export const TOOLCHAIN_PROBE = [
  'cd /',
  `printf '%s' '${TOOLCHAIN_MARKER}'`,
  `for t in ${TOOLS}; do`,
  '  command -v "$t" >/dev/null 2>&1 || continue',
  '  case $t in',
  '    go) v=$(go env GOVERSION 2>/dev/null | sed s/^go//) ;;',
  '    pip) v=$(python3 -m pip --version 2>/dev/null | cut -d" " -f2) ;;',
  '    python3) v=$(python3 -c "import platform; print(platform.python_version())") ;;',
  '    gcc) v=$(gcc -dumpfullversion 2>/dev/null) ;;',
  '    *) v=$("$t" --version 2>/dev/null | head -n 1 | sed -e "s/^v//" -e "s/^[^0-9]*//" -e "s/ .*//") ;;',
  '  esac',
  '  [ -n "$v" ] && printf "%s=%s," "$t" "$v"',
  'done',
  'echo',
].join('\n');

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
 * The probe's result from build output lines: the LAST marked line (the probe is the build's last
 * step, after every install script), validated like any label value.
 */
export function toolchainFromOutput(lines: readonly string[]): Toolchain {
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] ?? '';
    if (line.startsWith(TOOLCHAIN_MARKER)) return parseToolchain(line.slice(TOOLCHAIN_MARKER.length));
  }
  return {};
}
