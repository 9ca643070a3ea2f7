import type { ManifestFile } from './manifests.js';
import type { Toolchain } from './toolchain.js';

/**
 * The runtime version a repo pins at its root (`.nvmrc`, `.node-version`, `.python-version`,
 * `.tool-versions`, `volta.node`, go.mod's `go` line), set against the one its box
 * got: a repo that pins Node 18 and runs on 22, or needs Go 1.28 where the box has 1.27, fails in
 * ways that look like its own bugs. `create` says so in one line whatever the verbosity.
 *
 * The files are the repo's (hostile): only a bare version (digits and dots, an optional `v`) is
 * taken, so nothing else of them reaches the terminal; aliases (`lts/*`, `node`, `system`) are
 * skipped, since what they name depends on a registry's answer.
 */
export interface RuntimePin {
  tool: 'node' | 'python3' | 'go';
  /** The version as the repo wrote it, without a leading `v` (digits and dots only). */
  version: string;
  /** Where it was pinned: a file name, or `package.json volta.node`. */
  from: string;
  /** 'same': the box's version must start with it (node: the major); 'at-least': go's rule. */
  rule: 'same' | 'at-least';
}

const BARE_VERSION = /^v?(\d{1,4}(?:\.\d{1,6}){0,2})$/;
// The first line of a version file is what nvm, fnm, pyenv and uv read; more text is ignored.
const MAX_PIN_FILE_BYTES = 4096;

function bareVersion(text: string | undefined): string | undefined {
  return text === undefined ? undefined : BARE_VERSION.exec(text.trim())?.[1];
}

function firstLine(content: Buffer): string {
  return content.subarray(0, MAX_PIN_FILE_BYTES).toString('utf8').split(/\r?\n/, 1)[0] ?? '';
}

/** asdf's `.tool-versions`: `nodejs 18.17.0`, `python 3.12.1 3.11.0` (the first one is used). */
const TOOL_VERSIONS_NAMES: Record<string, RuntimePin['tool']> = {
  nodejs: 'node',
  node: 'node',
  python: 'python3',
  golang: 'go',
  go: 'go',
};

function toolVersionsPins(content: Buffer): RuntimePin[] {
  const pins: RuntimePin[] = [];
  for (const line of content.subarray(0, MAX_PIN_FILE_BYTES).toString('utf8').split(/\r?\n/)) {
    const [name, first] = line.replace(/#.*/, '').trim().split(/\s+/);
    const tool = name ? TOOL_VERSIONS_NAMES[name] : undefined;
    const version = bareVersion(first);
    if (tool && version)
      pins.push({ tool, version, from: '.tool-versions', rule: tool === 'go' ? 'at-least' : 'same' });
  }
  return pins;
}

function voltaPin(content: Buffer): RuntimePin[] {
  try {
    const manifest = JSON.parse(content.toString('utf8')) as { volta?: { node?: unknown } };
    const version = typeof manifest?.volta?.node === 'string' ? bareVersion(manifest.volta.node) : undefined;
    return version ? [{ tool: 'node', version, from: 'package.json volta.node', rule: 'same' }] : [];
  } catch {
    return [];
  }
}

/**
 * go.mod's `go 1.22.3`: the least Go that builds the module. (Its `toolchain` line is only a
 * preference, and a box never downloads a toolchain.)
 */
function goModPins(content: Buffer): RuntimePin[] {
  for (const line of content
    .subarray(0, 64 * 1024)
    .toString('utf8')
    .split(/\r?\n/)) {
    const version = bareVersion(/^go\s+(\S+)\s*(?:\/\/.*)?$/.exec(line.trim())?.[1]);
    if (version) return [{ tool: 'go', version, from: 'go.mod', rule: 'at-least' }];
  }
  return [];
}

/** The root's pins, in the order the tools themselves prefer them (the first per tool counts). */
export function runtimePins(files: readonly ManifestFile[]): RuntimePin[] {
  const root = new Map(
    files.filter((file) => !file.path.includes('/')).map((file) => [file.path, file.content]),
  );
  const pins: RuntimePin[] = [];
  const versionFile = (name: string, tool: RuntimePin['tool']) => {
    const content = root.get(name);
    const version = content ? bareVersion(firstLine(content)) : undefined;
    if (version) pins.push({ tool, version, from: name, rule: 'same' });
  };
  versionFile('.nvmrc', 'node');
  versionFile('.node-version', 'node');
  const manifest = root.get('package.json');
  if (manifest) pins.push(...voltaPin(manifest));
  versionFile('.python-version', 'python3');
  const goMod = root.get('go.mod');
  if (goMod) pins.push(...goModPins(goMod));
  const toolVersions = root.get('.tool-versions');
  if (toolVersions) pins.push(...toolVersionsPins(toolVersions));
  return pins;
}

function parts(version: string): number[] {
  return version.split('.').map((part) => Number.parseInt(part, 10));
}

/** Whether `have` meets the pin: node the same major, python the same major.minor, go at least. */
export function pinMet(pin: RuntimePin, have: string): boolean {
  const wanted = parts(pin.version);
  const got = parts(have);
  if (got.some(Number.isNaN)) return true;
  if (pin.rule === 'at-least') {
    for (let index = 0; index < wanted.length; index += 1) {
      const a = got[index] ?? 0;
      const b = wanted[index] ?? 0;
      if (a !== b) return a > b;
    }
    return true;
  }
  const significant = pin.tool === 'node' ? 1 : 2;
  return wanted.slice(0, significant).every((part, index) => got[index] === part);
}

/** The setting that picks the box's image for a tool (config key; env CA_SANDBOX_BASE_IMAGE_<P>). */
const SETTING: Record<RuntimePin['tool'], string> = {
  node: 'baseImages.node',
  python3: 'baseImages.python',
  go: 'baseImages.go',
};

/**
 * One line per tool whose first pin the box's toolchain misses (nothing for a tool the box lacks:
 * the provider decides what is installed, and says so itself).
 */
export function runtimeMismatches(files: readonly ManifestFile[], toolchain: Toolchain): string[] {
  const seen = new Set<RuntimePin['tool']>();
  const lines: string[] = [];
  for (const pin of runtimePins(files)) {
    if (seen.has(pin.tool)) continue;
    seen.add(pin.tool);
    const have = toolchain[pin.tool];
    if (have === undefined || pinMet(pin, have)) continue;
    const name = pin.tool === 'python3' ? 'python' : pin.tool;
    lines.push(
      pin.rule === 'at-least'
        ? `the repo needs ${name} ${pin.version} or newer (${pin.from}); the box has ${name} ${have}, so ${name} commands fail there (no toolchain download in the box; ${SETTING[pin.tool]} picks the box's image)`
        : `the repo asks for ${name} ${pin.version} (${pin.from}); the box has ${name} ${have}, so what it runs may behave differently (${SETTING[pin.tool]} picks the box's image)`,
    );
  }
  return lines;
}
