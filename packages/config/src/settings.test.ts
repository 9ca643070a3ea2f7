import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from './errors.js';
import { configDir, configLocation, dataDir } from './paths.js';
import { currentSettings, DEFAULT_BASE_IMAGES, loadSettings, SETTING_KEYS } from './settings.js';

const dir = mkdtempSync(join(tmpdir(), 'ca-sbx-config-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

describe('where the file is', () => {
  it('follows XDG on Linux, Application Support on macOS, and CA_SANDBOX_CONFIG first', () => {
    expect(configLocation({ env: {}, platform: 'linux', home: '/h' })).toEqual({
      path: '/h/.config/ca-sandbox/config.json',
      source: 'default',
    });
    expect(configDir({ env: { XDG_CONFIG_HOME: '/x' }, platform: 'linux', home: '/h' })).toBe(
      '/x/ca-sandbox',
    );
    // A relative XDG value is ignored, as the spec says.
    expect(configDir({ env: { XDG_CONFIG_HOME: 'rel' }, platform: 'linux', home: '/h' })).toBe(
      '/h/.config/ca-sandbox',
    );
    expect(configDir({ env: {}, platform: 'darwin', home: '/Users/u' })).toBe(
      '/Users/u/Library/Application Support/ca-sandbox',
    );
    expect(dataDir({ env: { XDG_DATA_HOME: '/d' }, platform: 'linux', home: '/h' })).toBe('/d/ca-sandbox');
    expect(
      configLocation({ env: { CA_SANDBOX_CONFIG: '/etc/x.json' }, platform: 'linux', home: '/h' }),
    ).toEqual({ path: '/etc/x.json', source: 'env' });
  });
});

describe('loadSettings', () => {
  it('has a default or unset for every key, and no file is fine at the default place', () => {
    const home = join(dir, 'empty-home');
    const settings = loadSettings({ env: { HOME: home }, platform: 'linux', home });
    expect(settings.file).toMatchObject({ exists: false, source: 'default' });
    expect(settings.all().map((s) => s.key)).toEqual(SETTING_KEYS);
    expect(settings.get('baseImages.node')).toMatchObject({
      value: DEFAULT_BASE_IMAGES.node,
      source: 'default',
    });
    expect(settings.get('caCertificates')).toMatchObject({ value: undefined, source: 'unset' });
    expect(settings.value('mcp.outputRoot')).toBe(join(home, '.local/share/ca-sandbox/output'));
    expect(settings.value('mcp.roots')).toEqual([]);
  });

  it('reads the file at the XDG place, then env wins, then flags win', () => {
    const xdg = join(dir, 'xdg');
    mkdirSync(join(xdg, 'ca-sandbox'), { recursive: true });
    writeFileSync(
      join(xdg, 'ca-sandbox', 'config.json'),
      JSON.stringify({
        baseImages: { node: 'ca-sbx-base:node', go: 'ca-sbx-base:go' },
        build: { timeoutSeconds: 120, cpus: 1.5 },
        mirrors: { npmRegistry: 'https://npm.example.test/' },
        mcp: { roots: ['/srv/src'] },
      }),
    );
    const env = { XDG_CONFIG_HOME: xdg, CA_SANDBOX_BASE_IMAGE_GO: 'env-go:1', CA_SANDBOX_BUILD_CPUS: '3' };
    const settings = loadSettings({
      env,
      platform: 'linux',
      home: '/h',
      flags: { 'build.timeoutSeconds': { value: 60, flag: '--build-timeout' } },
    });
    const path = join(xdg, 'ca-sandbox', 'config.json');
    expect(settings.file).toEqual({ path, source: 'default', exists: true });
    expect(settings.get('baseImages.node')).toMatchObject({
      value: 'ca-sbx-base:node',
      source: 'file',
      from: path,
    });
    expect(settings.get('baseImages.go')).toMatchObject({
      value: 'env-go:1',
      source: 'env',
      from: 'CA_SANDBOX_BASE_IMAGE_GO',
    });
    expect(settings.get('build.cpus')).toMatchObject({ value: 3, source: 'env' });
    expect(settings.get('build.timeoutSeconds')).toMatchObject({
      value: 60,
      source: 'flag',
      from: '--build-timeout',
    });
    expect(settings.value('mirrors.npmRegistry')).toBe('https://npm.example.test/');
    expect(settings.value('mcp.roots')).toEqual(['/srv/src']);
    // The global base-image variable covers every provider the specific one does not.
    expect(loadSettings({ env: { ...env, CA_SANDBOX_BASE_IMAGE: 'all:1' } }).value('baseImages.python')).toBe(
      'all:1',
    );
  });

  it.each([
    [{ build: { cpus: 'two' } }, /: build\.cpus: /],
    [{ baseImages: { node: 'a b' } }, /: baseImages\.node: not a valid image reference$/],
    [{ baseImages: { ruby: 'x' } }, /: baseImages\.ruby: unknown setting$/],
    [{ mirors: {} }, /: mirors: unknown setting$/],
    [{ caCertificates: 'relative.pem' }, /: caCertificates: expected an absolute path$/],
    [{ mirrors: { npmRegistry: 'file:///etc/passwd' } }, /: mirrors\.npmRegistry: /],
    [{ mcp: { roots: ['~/src'] } }, /: mcp\.roots\.0: expected an absolute path$/],
    [
      { claude: { keySource: 'ANTHROPIC_API_KEY' } },
      /: claude\.keySource: expected env:<var> or file:\/<absolute path>$/i,
    ],
    [
      { claude: { keySource: 'file:relative' } },
      /: claude\.keySource: expected env:<var> or file:\/<absolute path>$/i,
    ],
  ])('a bad file %j is one usage error naming the file and the key', (content, message) => {
    const path = file('bad.json', content);
    const load = () => loadSettings({ env: { CA_SANDBOX_CONFIG: path } });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(new RegExp(`^config file ${path}`));
    expect(load).toThrow(message);
    try {
      load();
    } catch (error) {
      expect(error).toMatchObject({ kind: 'usage', code: 'CONFIG_INVALID', where: path });
      expect(String((error as Error).message)).not.toContain('\n');
    }
  });

  it('refuses unreadable, non-json or oversized files and bad variables', () => {
    expect(() => loadSettings({ env: { CA_SANDBOX_CONFIG: join(dir, 'missing.json') } })).toThrow(
      /cannot read config file .*missing\.json \(named by CA_SANDBOX_CONFIG\): ENOENT/,
    );
    expect(() => loadSettings({ env: { CA_SANDBOX_CONFIG: file('x.json', '{nope') } })).toThrow(
      /not valid json/,
    );
    expect(() =>
      loadSettings({ env: { CA_SANDBOX_CONFIG: file('big.json', ' '.repeat(1024 * 1024 + 1)) } }),
    ).toThrow(/larger than 1 MiB/);
    expect(() => loadSettings({ env: { CA_SANDBOX_BUILD_TIMEOUT: '10s' } })).toThrow(
      /^CA_SANDBOX_BUILD_TIMEOUT: /,
    );
    expect(() => loadSettings({ env: { CA_SANDBOX_HELPER_IMAGE: '--privileged' } })).toThrow(
      /^CA_SANDBOX_HELPER_IMAGE: not a valid image reference$/,
    );
  });

  it('currentSettings loads once and again only when a relevant variable changed', () => {
    const saved = process.env.CA_SANDBOX_BUILD_MEMORY;
    try {
      process.env.CA_SANDBOX_BUILD_MEMORY = '3g';
      const first = currentSettings();
      expect(currentSettings()).toBe(first);
      expect(first.value('build.memory')).toBe('3g');
      process.env.CA_SANDBOX_BUILD_MEMORY = '4g';
      expect(currentSettings().value('build.memory')).toBe('4g');
    } finally {
      if (saved === undefined) delete process.env.CA_SANDBOX_BUILD_MEMORY;
      else process.env.CA_SANDBOX_BUILD_MEMORY = saved;
    }
  });
});
