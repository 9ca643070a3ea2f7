import { describe, expect, it } from 'vitest';
import {
  formatInstallScripts,
  INSTALL_SCRIPT_MARKER,
  INSTALL_SCRIPTS_SCAN,
  installScriptsFromOutput,
  parseInstallScripts,
} from './install-scripts.js';

const marker = (value: unknown) => `${INSTALL_SCRIPT_MARKER}${JSON.stringify(value)}`;

describe('install scripts', () => {
  it('reads the markers: known events only, valid names and versions, once per package', () => {
    const scripts = installScriptsFromOutput([
      'npm warn something',
      marker({ p: 'esbuild', v: '0.21.5', s: ['postinstall'], i: false }),
      marker({ p: '@scope/native', v: '1.0.0', s: ['node-gyp'], i: true }),
      marker({ p: 'esbuild', v: '0.21.5', s: ['postinstall'], i: false }),
      // Forged or broken lines from the install's own output are dropped.
      marker({ p: 'x\u001b[2J', v: '1', s: ['postinstall'] }),
      marker({ p: 'ok', v: '1 2', s: ['postinstall'] }),
      marker({ p: 'ok', v: '1', s: ['rm -rf /'] }),
      `${INSTALL_SCRIPT_MARKER}{not json`,
    ]);
    expect(scripts).toEqual([
      { package: '@scope/native', version: '1.0.0', scripts: ['node-gyp'], ignored: true },
      { package: 'esbuild', version: '0.21.5', scripts: ['postinstall'], ignored: false },
    ]);
  });

  it('keeps them in a label and reads the label back, bounded', () => {
    const scripts = [
      { package: '@scope/native', version: '1.0.0', scripts: ['install', 'postinstall'], ignored: true },
      { package: 'esbuild', version: '0.21.5', scripts: ['postinstall'], ignored: false },
    ];
    const label = formatInstallScripts(scripts);
    expect(label).toBe('@scope/native@1.0.0:install+postinstall! esbuild@0.21.5:postinstall');
    expect(parseInstallScripts(label)).toEqual({ scripts, more: 0 });
    const many = Array.from({ length: 250 }, (_, i) => ({
      package: `p${i}`,
      version: '1.0.0',
      scripts: ['postinstall'],
      ignored: false,
    }));
    const parsed = parseInstallScripts(formatInstallScripts(many));
    expect(parsed.scripts).toHaveLength(200);
    expect(parsed.more).toBe(50);
    expect(parseInstallScripts(undefined)).toEqual({ scripts: [], more: 0 });
    expect(parseInstallScripts('evil@1:rm+-rf junk')).toEqual({ scripts: [], more: 0 });
  });

  it('walks with the base image’s node, never failing the step', () => {
    expect(INSTALL_SCRIPTS_SCAN).toMatch(
      /^\[ ! -d \/deps\/src\/node_modules \] \|\| \[ ! -x \/usr\/local\/bin\/node \] \|\| \/usr\/local\/bin\/node -e '/,
    );
    expect(INSTALL_SCRIPTS_SCAN.endsWith(' 2>/dev/null || :')).toBe(true);
  });
});
