import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createProgram } from '../src/program.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const PLUGIN = join(ROOT, 'plugin');
const CLAUDE = fileURLToPath(new URL('../node_modules/.bin/claude', import.meta.url));
const COMMAND_FILES = ['sandbox', 'sandbox-shell', 'sandbox-exec', 'sandbox-cp', 'sandbox-destroy'];

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
      expect(meta['allowed-tools']).toBe('Bash(ca-sandbox:*)');
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
