import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createProgram } from '../src/program.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const PLUGIN = join(ROOT, 'plugin');
const CLAUDE = fileURLToPath(new URL('../node_modules/.bin/claude', import.meta.url));
const COMMAND_FILES = ['sandbox', 'sandbox-shell', 'sandbox-exec', 'sandbox-cp', 'sandbox-destroy'];
/**
 * What each command runs without a permission prompt: exactly the subcommands it needs. Nothing
 * that removes or writes on the host (destroy, prune, cp) is pre-approved: `Bash(x:*)` is a prefix
 * match, so `destroy:*` would cover `destroy --all` and `cp:*` would cover `cp --force`.
 */
const ALLOWED_TOOLS: Record<string, string> = {
  sandbox: 'Bash(ca-sandbox doctor:*), Bash(ca-sandbox create:*)',
  'sandbox-exec': 'Bash(ca-sandbox exec:*)',
  'sandbox-shell': 'Bash(ca-sandbox list:*)',
  'sandbox-cp': 'Bash(ca-sandbox list:*)',
  'sandbox-destroy': 'Bash(ca-sandbox list:*)',
};

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

/** Flat `key: value` frontmatter (all ours is); anything else in it is an error. */
function parseMarkdown(path: string): { meta: Record<string, string>; body: string } {
  const text = readFileSync(path, 'utf8');
  const match = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(text);
  if (!match) throw new Error(`${path}: no frontmatter`);
  const meta: Record<string, string> = {};
  for (const line of (match[1] ?? '').split('\n')) {
    const field = /^([a-z-]+): (.+)$/.exec(line);
    if (!field) throw new Error(`${path}: bad frontmatter line ${JSON.stringify(line)}`);
    meta[field[1] as string] = field[2] as string;
  }
  return { meta, body: match[2] ?? '' };
}

const program = createProgram({ exitCode: 0 });
const globalFlags = program.options.map((o) => o.long);
function subcommand(name: string) {
  return program.commands.find((c) => c.name() === name || c.aliases().includes(name));
}

/** Every `ca-sandbox <sub> ...` inside a code span or indented block, with the flags it uses. */
function cliMentions(markdown: string): { sub: string; flags: string[]; text: string }[] {
  const spans = [...markdown.matchAll(/`([^`]*)`/g)].map((m) => m[1] ?? '');
  const blocks = markdown
    .split('\n')
    .filter((line) => /^ {3,}ca-sandbox /.test(line))
    .map((line) => line.trim());
  return [...spans, ...blocks]
    .filter((text) => text.startsWith('ca-sandbox '))
    .map((text) => ({
      text,
      sub: text.split(/\s+/)[1] ?? '',
      flags: [...text.matchAll(/(?:^|\s|\[)(--[a-z][a-z-]*)/g)].map((m) => m[1] as string),
    }));
}

describe('plugin manifest files', () => {
  it('plugin.json names the plugin and its icon is a square PNG of 512–2048 px', () => {
    const manifest = readJson(join(PLUGIN, '.claude-plugin/plugin.json'));
    expect(manifest).toMatchObject({ name: 'ca-sandbox', license: 'MIT' });
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(String(manifest.description).length).toBeGreaterThan(20);
    const icon = readFileSync(join(PLUGIN, String(manifest.icon)));
    expect(icon.subarray(1, 4).toString()).toBe('PNG');
    const width = icon.readUInt32BE(16);
    expect(icon.readUInt32BE(20)).toBe(width);
    expect(width).toBeGreaterThanOrEqual(512);
    expect(width).toBeLessThanOrEqual(2048);
  });

  it('the root marketplace lists the plugin with source ./plugin', () => {
    const marketplace = readJson(join(ROOT, '.claude-plugin/marketplace.json'));
    const plugins = marketplace.plugins as { name: string; source: string; version: string }[];
    const manifest = readJson(join(PLUGIN, '.claude-plugin/plugin.json'));
    expect(plugins).toEqual([
      expect.objectContaining({ name: 'ca-sandbox', source: './plugin', version: manifest.version }),
    ]);
  });

  it('.mcp.json starts `ca-sandbox mcp`, a real subcommand', () => {
    const mcp = readJson(join(PLUGIN, '.mcp.json'));
    expect(mcp).toEqual({ mcpServers: { 'ca-sandbox': { command: 'ca-sandbox', args: ['mcp'] } } });
    expect(subcommand('mcp')).toBeDefined();
  });
});

describe('plugin commands', () => {
  it('are exactly the five commands', () => {
    expect(readdirSync(join(PLUGIN, 'commands')).sort()).toEqual(COMMAND_FILES.map((f) => `${f}.md`).sort());
  });

  it.each(COMMAND_FILES)(
    '%s.md has the frontmatter, takes $ARGUMENTS and never runs a shell line itself',
    (name) => {
      const { meta, body } = parseMarkdown(join(PLUGIN, 'commands', `${name}.md`));
      expect(Object.keys(meta).sort()).toEqual(['allowed-tools', 'argument-hint', 'description']);
      expect(meta['allowed-tools']).toBe(ALLOWED_TOOLS[name]);
      for (const rule of (meta['allowed-tools'] ?? '').split(/,\s*/)) {
        expect(rule).toMatch(/^Bash\(ca-sandbox (doctor|create|exec|list):\*\)$/);
      }
      expect(body).toContain('$ARGUMENTS');
      // `!` lines are run by Claude Code before the model sees the prompt: none, so no argument can
      // ever be spliced into one.
      expect(body).not.toMatch(/!`/);
      expect(body.split('\n').filter((line) => line.trimStart().startsWith('!'))).toEqual([]);
    },
  );

  it.each(COMMAND_FILES)('%s.md refers only to real CLI subcommands and their options', (name) => {
    const { body } = parseMarkdown(join(PLUGIN, 'commands', `${name}.md`));
    const mentions = cliMentions(body);
    expect(mentions.length).toBeGreaterThan(0);
    for (const mention of mentions) {
      const command = subcommand(mention.sub);
      expect(command, mention.text).toBeDefined();
      const known = [...globalFlags, ...(command?.options.map((o) => o.long) ?? [])];
      for (const flag of mention.flags) expect(known, `${mention.text}: ${flag}`).toContain(flag);
    }
  });
});

describe('plugin confirmations', () => {
  it('sandbox-destroy asks for an explicit yes before removing more than the named sandboxes', () => {
    const { body } = parseMarkdown(join(PLUGIN, 'commands', 'sandbox-destroy.md'));
    expect(body).toMatch(/Showing the list is not a confirmation/);
    expect(body).toMatch(/explicit yes/);
    // It destroys the ids it showed, never `--all` (which would also take one created meanwhile).
    expect(body).not.toMatch(/run\s+`ca-sandbox destroy --all/);
    expect(body).toMatch(/Never run\s+`ca-sandbox prune` \(without `--dry-run`\) yourself/);
  });
});

describe('plugin version', () => {
  const script = join(ROOT, 'scripts/sync-plugin-version.mjs');
  const run = promisify(execFile);

  it('is the cli package version, in the plugin manifest and the marketplace', async () => {
    const cli = readJson(join(ROOT, 'packages/cli/package.json'));
    expect(readJson(join(PLUGIN, '.claude-plugin/plugin.json')).version).toBe(cli.version);
    await expect(run(process.execPath, [script, '--check'])).resolves.toBeDefined();
  });

  it('the sync script follows a version bump (as changeset version makes) and --check catches drift', async () => {
    const copy = mkdtempSync(join(tmpdir(), 'ca-sbx-plugin-version-'));
    try {
      for (const path of [
        'packages/cli/package.json',
        'plugin/.claude-plugin/plugin.json',
        '.claude-plugin/marketplace.json',
      ]) {
        mkdirSync(dirname(join(copy, path)), { recursive: true });
        cpSync(join(ROOT, path), join(copy, path));
      }
      const pkg = readJson(join(copy, 'packages/cli/package.json'));
      writeFileSync(join(copy, 'packages/cli/package.json'), JSON.stringify({ ...pkg, version: '7.8.9' }));
      await expect(run(process.execPath, [script, copy, '--check'])).rejects.toMatchObject({ code: 1 });
      await run(process.execPath, [script, copy]);
      expect(readJson(join(copy, 'plugin/.claude-plugin/plugin.json')).version).toBe('7.8.9');
      const marketplace = readJson(join(copy, '.claude-plugin/marketplace.json'));
      expect((marketplace.plugins as { version: string }[])[0]?.version).toBe('7.8.9');
      await expect(run(process.execPath, [script, copy, '--check'])).resolves.toBeDefined();
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});

describe('plugin skills', () => {
  it.each(['sandbox-lifecycle', 'sandbox-claude-inside'])(
    '%s has a name matching its folder and real CLI references',
    (name) => {
      const { meta, body } = parseMarkdown(join(PLUGIN, 'skills', name, 'SKILL.md'));
      expect(meta.name).toBe(name);
      expect(meta.description?.length).toBeGreaterThan(40);
      for (const mention of cliMentions(body)) {
        const command = subcommand(mention.sub);
        expect(command, mention.text).toBeDefined();
        const known = [...globalFlags, ...(command?.options.map((o) => o.long) ?? [])];
        for (const flag of mention.flags) expect(known, `${mention.text}: ${flag}`).toContain(flag);
      }
    },
  );

  it('the lifecycle skill gates the five phases', () => {
    const { body } = parseMarkdown(join(PLUGIN, 'skills/sandbox-lifecycle/SKILL.md'));
    const phases = [...body.matchAll(/^## (\d)\. (.+)$/gm)].map((m) => m[2]);
    expect(phases).toEqual(['Pre-flight', 'Clone and build', 'Isolated run', 'Interact', 'Teardown']);
    expect(body.match(/^Gate: /gm)).toHaveLength(5);
    expect(body).toContain('## Hard rules');
  });

  it('the claude-inside skill never mounts a credentials volume into an untrusted box', () => {
    const { body } = parseMarkdown(join(PLUGIN, 'skills/sandbox-claude-inside/SKILL.md'));
    expect(body).toMatch(/credentials volume is never mounted into a box that runs untrusted code/);
  });

  it('the claude-inside skill prescribes what the CLI does: --with-claude, no extra --allow, no forced runsc', () => {
    const { body } = parseMarkdown(join(PLUGIN, 'skills/sandbox-claude-inside/SKILL.md'));
    const creates = cliMentions(body).filter((mention) => ['create', 'run'].includes(mention.sub));
    expect(creates.length).toBeGreaterThan(0);
    for (const mention of creates) {
      expect(mention.flags, mention.text).toContain('--with-claude');
      // --with-claude refuses both (main.test): a skill line that adds them would fail for the user.
      expect(mention.flags, mention.text).not.toContain('--allow');
      expect(mention.text).not.toMatch(/--runtime runsc/);
    }
    expect(body).toMatch(/api\.anthropic\.com:443/);
  });
});

describe('claude plugin validate', () => {
  const run = promisify(execFile);
  it.skipIf(!existsSync(CLAUDE))(
    'passes --strict for the plugin and the marketplace',
    async () => {
      for (const target of [PLUGIN, ROOT]) {
        const { stdout } = await run(CLAUDE, ['plugin', 'validate', target, '--strict'], {
          cwd: ROOT,
          timeout: 120_000,
        });
        expect(stdout).toContain('Validation passed');
      }
    },
    150_000,
  );
});
