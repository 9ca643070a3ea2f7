import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENV_NAME_PATTERN, isProxyVariable } from '@ca-sandbox/docker';
import { DEPS_DIR, DEPS_SRC, hasControlCharacter } from '@ca-sandbox/docker/contracts';
import { z } from 'zod';
import { NixpacksMissingError, NixpacksPlanError } from './errors.js';
import type { ManifestFile } from './manifests.js';
import { nixpacksEnv, runNixpacks } from './nixpacks-run.js';
import type { Detection, Provider } from './provider.js';
import { NODE_FINISH } from './providers/node/layout.js';
import { builtinRecipe, type EnvEntry, type InstallRecipe, providerEnv } from './recipe.js';

const MAX_CMDS = 32;
const MAX_CMD_CHARS = 4096;
const MAX_VARIABLES = 64;

// The plan comes from the repo (its nixpacks.toml can set phases, commands, variables, images):
// every field we take is checked; everything else is ignored.
const PhaseSchema = z
  .object({
    name: z.string().max(128).optional(),
    dependsOn: z.array(z.string().max(128)).max(64).optional(),
    cmds: z.array(z.string().max(MAX_CMD_CHARS)).max(MAX_CMDS).optional(),
    nixPkgs: z.array(z.string().max(256)).max(256).optional(),
    aptPkgs: z.array(z.string().max(256)).max(256).optional(),
    paths: z.array(z.string().max(512)).max(64).optional(),
    cacheDirectories: z.array(z.string().max(512)).max(64).optional(),
  })
  .loose();

export const NixpacksPlanSchema = z
  .object({
    providers: z.array(z.string().max(128)).max(32).optional(),
    buildImage: z.string().max(512).optional(),
    variables: z.record(z.string().max(256), z.string().max(MAX_CMD_CHARS)).optional(),
    phases: z.record(z.string().max(128), PhaseSchema).optional(),
    start: z
      .object({ cmd: z.string().max(MAX_CMD_CHARS).nullish() })
      .loose()
      .optional(),
  })
  .loose();
export type NixpacksPlan = z.infer<typeof NixpacksPlanSchema>;

// Variables a plan may not set: they steer our layout, the loader or the shell.
const RESERVED = new Set([
  'PATH',
  'HOME',
  'USER',
  'SHELL',
  'PWD',
  'ENV',
  'BASH_ENV',
  'IFS',
  'PS4',
  'PROMPT_COMMAND',
  'NODE_PATH',
  'NODE_OPTIONS',
  'PYTHONPATH',
  'PYTHONSTARTUP',
  'PYTHONHOME',
  'PYTHONUSERBASE',
  'GOPATH',
  'GOMODCACHE',
  'GOFLAGS',
  'GOCACHE',
  'GOTOOLCHAIN',
  'CARGO_HOME',
  'RUSTUP_HOME',
]);

/** Strips the YAML header of a nixpacks snapshot (`---\n...\n---\n{json}`) when there is one. */
export function planJsonFromSnapshot(text: string): unknown {
  const start = text.indexOf('{');
  if (start < 0) throw new NixpacksPlanError('no json object in the nixpacks plan output');
  try {
    return JSON.parse(text.slice(start));
  } catch {
    throw new NixpacksPlanError('the nixpacks plan output is not valid json');
  }
}

/** Moves nixpacks' /app and /opt/venv layout under /deps (the volume owns /work/repo, /app is not ours). */
export function relocate(text: string): string {
  return text
    .replace(/\/app\/node_modules(?=$|[/\s"':;])/g, `${DEPS_DIR}/node_modules`)
    .replace(/\/app(?=$|[/\s"':;])/g, DEPS_SRC)
    .replace(/\/opt\/venv(?=$|[/\s"':;])/g, `${DEPS_DIR}/venv`);
}

function providerOfPlan(plan: NixpacksPlan, fallback: Provider): Provider {
  const meta = (plan.variables?.NIXPACKS_METADATA ?? '').split(',')[0] ?? '';
  const known: Record<string, Provider> = { node: 'node', python: 'python', go: 'go', rust: 'rust' };
  return known[meta] ?? fallback;
}

export interface PlanTranslation {
  provider: Provider;
  install: string[];
  variables: EnvEntry[];
  paths: string[];
  notes: string[];
}

/**
 * Validates a nixpacks plan (untrusted) and takes what the /deps layout can use: the install
 * phase's commands (relocated from /app and /opt/venv into /deps), safe variables and PATH
 * entries under /deps. Build/start phases, nix packages and build images are not used (noted).
 */
export function translatePlan(input: unknown, fallback: Provider): PlanTranslation {
  const parsed = NixpacksPlanSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new NixpacksPlanError(
      `the nixpacks plan has an unexpected shape at ${issue?.path.join('.') || 'root'}: ${issue?.message.toLowerCase() ?? ''}`,
    );
  }
  const plan = parsed.data;
  const notes: string[] = [];
  const phases = plan.phases ?? {};
  const install = phases.install?.cmds ?? [];
  for (const cmd of install) {
    if (cmd.includes('\u0000')) throw new NixpacksPlanError('a nixpacks install command contains a nul byte');
  }
  const variables: EnvEntry[] = [];
  for (const [name, value] of Object.entries(plan.variables ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (
      !ENV_NAME_PATTERN.test(name) ||
      RESERVED.has(name) ||
      name.startsWith('LD_') ||
      // A proxy is the install's (its script exports the gateway), never the repo's: the image keeps its Env.
      isProxyVariable(name) ||
      hasControlCharacter(value)
    ) {
      notes.push(`nixpacks variable ${JSON.stringify(name.slice(0, 64))} ignored`);
      continue;
    }
    if (variables.length >= MAX_VARIABLES) {
      notes.push('too many nixpacks variables: the rest ignored');
      break;
    }
    variables.push({ name, value: relocate(value) });
  }
  const paths: string[] = [];
  for (const raw of phases.install?.paths ?? []) {
    const path = relocate(raw);
    if (/^\/deps\/[A-Za-z0-9._/-]+$/.test(path) && !path.includes('..')) paths.push(path);
    else notes.push(`nixpacks path ${JSON.stringify(raw.slice(0, 100))} ignored (not under /deps)`);
  }
  const nix = Object.values(phases).flatMap((phase) => phase.nixPkgs ?? []);
  if (nix.length)
    notes.push(
      `nix packages not installed (the toolchain comes from the base image): ${nix.slice(0, 10).join(', ')}`,
    );
  const skipped = Object.keys(phases).filter((name) => name !== 'install' && name !== 'setup');
  if (skipped.length) notes.push(`nixpacks phases not run (they need the source): ${skipped.join(', ')}`);
  return {
    provider: providerOfPlan(plan, fallback),
    install: install.map(relocate),
    variables,
    paths,
    notes,
  };
}

/** The recipe of the nixpacks builder: the plan's install phase on our /deps layout. */
export function nixpacksRecipe(
  plan: unknown,
  files: readonly ManifestFile[],
  detection: Detection,
): InstallRecipe {
  const translated = translatePlan(plan, detection.provider);
  const env = providerEnv(detection.provider, files);
  const extraPath = translated.paths.filter(
    (p) => !env.some((e) => e.name === 'PATH' && e.value.includes(p)),
  );
  if (extraPath.length) env.push({ name: 'PATH', value: `${extraPath.join(':')}:$PATH`, expand: true });
  env.push(...translated.variables);
  if (translated.install.length === 0) {
    const fallback = builtinRecipe(files, detection);
    return {
      ...fallback,
      env,
      notes: [
        ...translated.notes,
        'the nixpacks plan has no install phase: built-in install steps used',
        ...fallback.notes,
      ],
    };
  }
  const install = [...translated.install];
  if (detection.provider === 'node') install.push(...NODE_FINISH);
  // nixpacks' /opt/venv becomes /deps/venv: make its site-packages importable without activation.
  if (install.some((cmd) => cmd.includes('/deps/venv'))) {
    env.push(
      { name: 'VIRTUAL_ENV', value: '/deps/venv' },
      { name: 'PATH', value: '/deps/venv/bin:$PATH', expand: true },
    );
  }
  return {
    provider: detection.provider,
    install,
    env,
    installEnv: [],
    notes: translated.notes,
    linkNodeModules: detection.provider === 'node',
  };
}

/** `nixpacks plan <dir> -f json` on a manifests-only context. */
export async function nixpacksPlan(contextDir: string): Promise<unknown> {
  const home = await mkdtemp(join(tmpdir(), 'ca-sbx-nixpacks-'));
  try {
    const result = await runNixpacks(
      [process.env.CA_SANDBOX_NIXPACKS_BIN ?? 'nixpacks', 'plan', contextDir, '-f', 'json'],
      nixpacksEnv(home),
      60_000,
    );
    if (result.code === 'ENOENT') throw new NixpacksMissingError();
    if (result.code !== 0)
      throw new NixpacksPlanError(
        `nixpacks plan failed: ${result.stderr.trim().split('\n')[0]?.slice(0, 300) ?? ''}`,
      );
    return planJsonFromSnapshot(result.stdout);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}
