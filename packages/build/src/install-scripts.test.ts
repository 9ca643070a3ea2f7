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

  it("python: pip's report markers and pip's own build lines, one row per package built from source", () => {
    const scripts = installScriptsFromOutput([
      'Collecting ca-sdist-probe==1.0',
      marker({ p: 'ca-sdist-probe', v: '1.0', s: ['sdist-build'], i: false }),
      '  Building wheel for ca_sdist_probe (pyproject.toml): started',
      // A build that rewrote pip's report after pip wrote it still shows by pip's own line.
      '  Building wheel for Hidden.Pkg (setup.py): started',
      '  Running setup.py install for legacy-pkg ... done',
      '  Building wheel for x\u001b[2J (pyproject.toml): started',
    ]);
    expect(scripts).toEqual([
      { package: 'ca-sdist-probe', version: '1.0', scripts: ['sdist-build'], ignored: false },
      { package: 'hidden-pkg', version: '', scripts: ['sdist-build'], ignored: false },
      { package: 'legacy-pkg', version: '', scripts: ['sdist-build'], ignored: false },
    ]);
    expect(parseInstallScripts(formatInstallScripts(scripts)).scripts).toEqual(scripts);
  });

  it('walks with the base image’s node, never failing the step', () => {
    expect(INSTALL_SCRIPTS_SCAN).toMatch(
      /^\[ ! -d \/deps\/src\/node_modules \] \|\| \[ ! -x \/usr\/local\/bin\/node \] \|\| \/usr\/local\/bin\/node -e '/,
    );
    expect(INSTALL_SCRIPTS_SCAN.endsWith(' 2>/dev/null || :')).toBe(true);
    // pip's report is read by the base's python, isolated: nothing of /deps/python is imported.
    expect(INSTALL_SCRIPTS_SCAN).toContain(
      "' 2>/dev/null || :\n[ ! -f /tmp/ca-sbx-pip-report.json ] || [ ! -x /usr/bin/python3 ] || /usr/bin/python3 -I -S -c '",
    );
  });
});
