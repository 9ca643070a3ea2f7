import { describe, expect, it } from 'vitest';
import {
  formatInstallScripts,
  INSTALL_SCRIPT_MARKER,
  INSTALL_SCRIPTS_SCAN,
  InstallScriptsLines,
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
    expect(parseInstallScripts(label)).toEqual({ scripts, more: 0, incomplete: false });
    const many = Array.from({ length: 250 }, (_, i) => ({
      package: `p${i}`,
      version: '1.0.0',
      scripts: ['postinstall'],
      ignored: false,
    }));
    const parsed = parseInstallScripts(formatInstallScripts(many));
    expect(parsed.scripts).toHaveLength(200);
    expect(parsed.more).toBe(50);
    expect(parseInstallScripts(undefined)).toEqual({ scripts: [], more: 0, incomplete: false });
    expect(parseInstallScripts('evil@1:rm+-rf junk')).toEqual({ scripts: [], more: 0, incomplete: false });
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

  it("python (red team): a forged marker cannot take back pip's own line; code pip ran for a candidate it dropped shows", () => {
    const forged = installScriptsFromOutput([
      '  Building wheel for evil (pyproject.toml): started',
      marker({ p: 'evil', v: '1.0', s: ['preinstall'], i: true }),
      // ignored means nothing for a Python build: a marker saying so is forged.
      marker({ p: 'other', v: '2.0', s: ['sdist-build'], i: true }),
    ]);
    expect(forged).toEqual([
      { package: 'evil', version: '1.0', scripts: ['preinstall'], ignored: true },
      { package: 'evil', version: '', scripts: ['sdist-build'], ignored: false },
      { package: 'other', version: '2.0', scripts: ['sdist-build'], ignored: false },
    ]);
    const dropped = installScriptsFromOutput([
      'Collecting evil',
      '  Downloading evil-2.0.tar.gz (1.0 kB)',
      '  Preparing metadata (setup.py): started',
      '  Downloading evil-1.0-py3-none-any.whl (1.0 kB)',
      'Collecting fine==1.0',
      '  Downloading fine-1.0-py3-none-any.whl (1.0 kB)',
      'Successfully installed evil-1.0 fine-1.0',
    ]);
    expect(dropped.map((entry) => entry.package)).toEqual(['evil']);
  });

  it('keeps the lines it reads from the whole output, bounded; past the bound the label says incomplete', () => {
    const kept = new InstallScriptsLines();
    kept.push('npm warn nothing of ours');
    kept.push('  Building wheel for early (setup.py): started');
    for (let i = 0; i < 30_000; i += 1) kept.push(`Collecting flood${i}`);
    kept.push(marker({ p: 'late', v: '1', s: ['postinstall'] }));
    expect(kept.lines[0]).toBe('  Building wheel for early (setup.py): started');
    expect(kept.dropped).toBe(10_001);
    // The walk's markers come last and have room of their own.
    expect(kept.lines.at(-1)).toContain('"late"');
    const label = formatInstallScripts(installScriptsFromOutput(kept.lines), kept.dropped > 0);
    expect(label.endsWith(' ?')).toBe(true);
    expect(parseInstallScripts(label)).toMatchObject({ incomplete: true });
    expect(parseInstallScripts('a@1:postinstall')).toMatchObject({ incomplete: false });
  });

  it('walks with the base image’s node, never failing the step', () => {
    expect(INSTALL_SCRIPTS_SCAN).toMatch(
      /^\[ ! -d \/deps\/src\/node_modules \] \|\| \[ ! -x \/usr\/local\/bin\/node \] \|\| \/usr\/local\/bin\/node -e '/,
    );
    // pip's report is read by the image's own python, isolated: nothing of /deps/python is imported.
    expect(INSTALL_SCRIPTS_SCAN).toContain(
      `' 2>/dev/null || :\n[ ! -f /tmp/ca-sbx-pip-report.json ] || for py in /usr/bin/python3 /usr/local/bin/python3; do [ -x "$py" ] && { "$py" -I -S -c '`,
    );
    expect(INSTALL_SCRIPTS_SCAN.endsWith("' 2>/dev/null; break; }; done || :")).toBe(true);
    // A report it cannot read makes the list incomplete.
    const kept = new InstallScriptsLines();
    kept.push(`${INSTALL_SCRIPT_MARKER}incomplete`);
    expect(kept.incomplete).toBe(true);
    expect(kept.lines).toEqual([]);
  });
});
