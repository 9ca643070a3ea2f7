// Only @ca-sandbox/docker reaches the docker engine: it alone spawns the docker CLI and opens the
// engine's socket. This reads every shipped source file of the other packages (tests and their
// fixtures excluded) and fails when one of them could do either itself:
// - a process API (node:child_process, execa) is allowed only in the files listed below, which
//   run another named program, and none of them may name the docker binary;
// - a network API (node:net, node:http, node:https, node:http2, undici) is allowed only where
//   listed, and no file may name the engine's socket or DOCKER_HOST;
// - no file hands the docker CLI an argv (`docker(...)`, `spawnDocker(...)`): the typed verbs of
//   `engine` are the only way in.
// It checks the text, not what runs: a program name built at run time would pass. What it does
// pin is the boundary as written, so a new `spawn('docker', ...)` or socket client shows up here.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const PACKAGES = join(ROOT, 'packages');

/** Files outside @ca-sandbox/docker that may start processes, and the program each one runs. */
const PROCESS_ALLOWED: Record<string, string> = {
  'packages/build/src/nixpacks-run.ts': 'nixpacks (the plan of a repo, on the host; it never builds)',
  'packages/network/src/iptables.ts': 'iptables / ip6tables (the allowlist rules)',
  'packages/network/src/host-ranges.ts': 'ip -j (the host addresses and routes)',
};
/** Files outside @ca-sandbox/docker that may use a network API, and why. */
const NETWORK_ALLOWED: Record<string, string> = {
  'packages/cli/src/exec-stdin.ts': 'node:net Socket over the stdin file descriptor (never a connection)',
};

/**
 * A docker CLI argv handed over by `docker(...)` or `spawnDocker(...)`: outside @ca-sandbox/docker
 * every call goes through a typed verb of `engine` instead (see packages/docker/README.md; the
 * verbs that still run the CLI, `image.build` and `image.pull`, own their argv's first word).
 */
const RAW_ARGV_CALL = /\b(?:docker|spawnDocker)\(/;

/** A module loaded by `import ... from`, `import(...)`, `require(...)` or a bare `import '...'`. */
const loads = (modules: string) =>
  new RegExp(`(?:\\bfrom|\\bimport|\\brequire)\\s*\\(?\\s*['"](?:${modules})['"]`);
const PROCESS_MODULE = loads('(?:node:)?child_process|execa');
const NETWORK_MODULE = loads('(?:node:)?(?:net|http|https|http2|tls)|undici|docker-modem|dockerode');
/** The docker binary named as a program: `'docker'`, `"docker"`, `` `docker` `` or an absolute path to it. */
const DOCKER_PROGRAM = /(['"`])(?:\/[^'"`\s]*\/)?docker\1/;
const ENGINE_ADDRESS = /docker\.sock|DOCKER_HOST|socketPath/;

function shipped(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!['node_modules', 'dist', 'fixtures', '__fixtures__'].includes(entry.name))
        files.push(...shipped(path));
    } else if (/\.(?:[cm]?ts|[cm]?js)$/.test(entry.name) && !/\.test\.[cm]?[jt]s$/.test(entry.name)) {
      files.push(path);
    }
  }
  return files;
}

/** Every shipped source file of every package: each package's src, and the CLI's bin. */
function sources(): Map<string, string> {
  const found = new Map<string, string>();
  for (const name of readdirSync(PACKAGES)) {
    for (const part of ['src', 'bin']) {
      let files: string[] = [];
      try {
        files = shipped(join(PACKAGES, name, part));
      } catch {
        continue;
      }
      for (const file of files) found.set(relative(ROOT, file), readFileSync(file, 'utf8'));
    }
  }
  return found;
}

/** Comments out of the way: prose may talk about docker and sockets. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

const all = sources();
const inDocker = (path: string) => path.startsWith('packages/docker/');
const outside = [...all].filter(([path]) => !inDocker(path));

describe('only @ca-sandbox/docker reaches the engine', () => {
  it('the barrel does not hand out the CLI runner (tests get it from @ca-sandbox/docker/cli)', async () => {
    // By the package's own names, as its users load them (the built entries: a specifier in a
    // variable, so a typecheck before the build does not look for them).
    const load = (entry: string) => import(`@ca-sandbox/docker${entry}`) as Promise<Record<string, unknown>>;
    for (const entry of [await load(''), await load('/process')]) {
      expect(entry.docker).toBeUndefined();
      expect(entry.spawnDocker).toBeUndefined();
    }
    expect(typeof (await load('/cli')).docker).toBe('function');
  });

  it('reads the other packages and sees the docker package itself reach it (the checks see something)', () => {
    expect(outside.length).toBeGreaterThan(100);
    const docker = [...all].filter(([path]) => inDocker(path)).map(([, text]) => code(text));
    expect(docker.some((text) => PROCESS_MODULE.test(text) && DOCKER_PROGRAM.test(text))).toBe(true);
    expect(docker.some((text) => NETWORK_MODULE.test(text) && ENGINE_ADDRESS.test(text))).toBe(true);
    expect(docker.some((text) => RAW_ARGV_CALL.test(text))).toBe(true);
  });

  it('no module outside it starts a process, except the listed ones (which run other programs)', () => {
    const starting = outside.filter(([, text]) => PROCESS_MODULE.test(code(text))).map(([path]) => path);
    expect(starting.sort()).toEqual(Object.keys(PROCESS_ALLOWED).sort());
  });

  it('none of those names the docker binary as a program', () => {
    const naming = outside
      .filter(([path, text]) => path in PROCESS_ALLOWED && DOCKER_PROGRAM.test(code(text)))
      .map(([path]) => path);
    expect(naming).toEqual([]);
  });

  it('no module outside it hands the docker CLI an argv (every caller uses the verbs)', () => {
    const spelling = outside.filter(([, text]) => RAW_ARGV_CALL.test(code(text))).map(([path]) => path);
    expect(spelling).toEqual([]);
  });

  it('no module outside it opens a network API, except the listed ones, or names the engine address', () => {
    const networking = outside.filter(([, text]) => NETWORK_MODULE.test(code(text))).map(([path]) => path);
    expect(networking.sort()).toEqual(Object.keys(NETWORK_ALLOWED).sort());
    const addressing = outside.filter(([, text]) => ENGINE_ADDRESS.test(code(text))).map(([path]) => path);
    expect(addressing).toEqual([]);
  });
});
