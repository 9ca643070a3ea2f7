import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../bin/ca-sandbox.js', import.meta.url));
export const LIFECYCLE_BUILT = existsSync(
  fileURLToPath(new URL('../../lifecycle/dist/index.js', import.meta.url)),
);

/** The base images official names cannot be pulled here: every provider builds on local ones. */
export const LOCAL_IMAGES_ENV: Record<string, string> = {
  CA_SANDBOX_BASE_IMAGE: 'ca-sbx-base:debian',
  CA_SANDBOX_BASE_IMAGE_NODE: 'ca-sbx-base:node',
  CA_SANDBOX_BASE_IMAGE_PYTHON: 'ca-sbx-base:python',
  CA_SANDBOX_BASE_IMAGE_GO: 'ca-sbx-base:go',
};

export function dockerReachable(): boolean {
  try {
    execFileSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'ignore', timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

export interface BinResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The bin's process id (what its build contexts are named by). */
  pid?: number;
}

/** Runs the real bin (a new node process, as a user would) and collects its output. */
export function runBin(args: string[], env: Record<string, string> = {}, input?: string): Promise<BinResult> {
  return runBinWithExactEnv(
    args,
    { ...(process.env as Record<string, string>), ...LOCAL_IMAGES_ENV, NO_COLOR: '1', ...env },
    input,
  );
}

/**
 * The environment of a new login shell: PATH, the docker endpoint and the given variables, none
 * of the CA_SANDBOX_* settings the test runner exports.
 */
export function freshShellEnv(extra: Record<string, string>): Record<string, string> {
  const keep = [
    'PATH',
    'DOCKER_HOST',
    'LANG',
    'TMPDIR',
    'HTTP_PROXY',
    'HTTPS_PROXY',
    'NO_PROXY',
    'http_proxy',
    'https_proxy',
    'no_proxy',
  ];
  const env: Record<string, string> = { NO_COLOR: '1' };
  for (const name of keep) if (process.env[name]) env[name] = process.env[name] as string;
  return { ...env, ...extra };
}

/** Runs the real bin with exactly `env` (nothing inherited). */
export function runBinWithExactEnv(
  args: string[],
  env: Record<string, string>,
  input?: string,
): Promise<BinResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, ...(child.pid ? { pid: child.pid } : {}) }));
    child.stdin.end(input ?? '');
  });
}

/** Last-resort cleanup of one sandbox's objects, by its id label, whatever the CLI did. */
export function forceRemoveSandbox(id: string): void {
  const filter = `label=ca.sandbox.id=${id}`;
  const list = (args: string[]) =>
    execFileSync('docker', args, { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
  const containers = list(['ps', '-aq', '--filter', filter]);
  if (containers.length) execFileSync('docker', ['rm', '-f', ...containers], { stdio: 'ignore' });
  const volumes = list(['volume', 'ls', '-q', '--filter', filter]);
  if (volumes.length) execFileSync('docker', ['volume', 'rm', '-f', ...volumes], { stdio: 'ignore' });
  const networks = list(['network', 'ls', '-q', '--filter', filter]);
  if (networks.length) execFileSync('docker', ['network', 'rm', ...networks], { stdio: 'ignore' });
}

/** Objects labeled with this sandbox id that still exist. */
export function remainingObjects(id: string): string[] {
  const filter = `label=ca.sandbox.id=${id}`;
  return [
    ['ps', '-aq', '--filter', filter],
    ['volume', 'ls', '-q', '--filter', filter],
    ['network', 'ls', '-q', '--filter', filter],
  ].flatMap((args) =>
    execFileSync('docker', args, { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean),
  );
}

/**
 * Runs the bin in a real pseudo-terminal (util-linux `script`): waits until the terminal shows
 * `prompt`, types `input`, and collects everything the terminal received.
 */
export function runBinInTerminal(
  args: string[],
  prompt: RegExp,
  input: string,
  timeoutMs = 240_000,
): Promise<{ code: number | null; output: string }> {
  const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', `stty rows 30 cols 100; exec ${command}`, '/dev/null'], {
      env: { ...process.env, ...LOCAL_IMAGES_ENV, NO_COLOR: '1', TERM: 'xterm-256color' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    let typed = false;
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (chunk) => {
      output += chunk;
      if (!typed && prompt.test(output)) {
        typed = true;
        child.stdin.write(input);
      }
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      child.stdin.end();
      resolve({ code, output });
    });
  });
}

/**
 * A work folder of fixture folders whose sandboxes a test's afterAll removes: `folder` writes one
 * (flat files), `create` makes a sandbox of one and `track` names another id to destroy, `cleanup`
 * destroys them all (the bin first,
 * then by label), checks nothing is left and removes the folder.
 */
export function sandboxWorkspace(prefix: string) {
  const work = mkdtempSync(join(tmpdir(), prefix));
  const ids: string[] = [];
  return {
    work,
    folder(name: string, files: Record<string, string>): string {
      const dir = join(work, name);
      mkdirSync(dir);
      for (const [file, content] of Object.entries(files)) writeFileSync(join(dir, file), content);
      return dir;
    },
    track(id: string): string {
      ids.push(id);
      return id;
    },
    /** `ca-sandbox create <dir> --name <a new tracked id> ...extra`, and that id. */
    async create(dir: string, extra: string[] = []): Promise<BinResult & { id: string }> {
      const id = `sbx-${randomUUID().slice(0, 8)}`;
      ids.push(id);
      return { id, ...(await runBin(['create', dir, '--name', id, ...extra])) };
    },
    async cleanup(): Promise<string[]> {
      const left: string[] = [];
      for (const id of ids) {
        await runBin(['destroy', id]).catch(() => undefined);
        forceRemoveSandbox(id);
        left.push(...remainingObjects(id));
      }
      rmSync(work, { recursive: true, force: true });
      return left;
    },
  };
}
