import { BUILD_DEFAULTS, type currentSettings, DEFINITIONS } from '@ca-sandbox/config';
import { parseSize } from '@ca-sandbox/docker';
import { InvalidBuildOptionsError } from './errors.js';

// Defaults and their overrides (file, env) live with the settings: @ca-sandbox/config.
export const DEFAULT_BUILD_TIMEOUT_MS = BUILD_DEFAULTS.timeoutSeconds * 1000;
export const DEFAULT_BUILD_MEMORY = BUILD_DEFAULTS.memory;
export const DEFAULT_BUILD_CPUS = BUILD_DEFAULTS.cpus;
export const DEFAULT_BUILD_PROCESSES = BUILD_DEFAULTS.processes;
export const DEFAULT_BUILD_FILE_SIZE = BUILD_DEFAULTS.fileSizeBytes;
/** Env override of the build time limit, in whole seconds. */
export const BUILD_TIMEOUT_ENV = DEFINITIONS['build.timeoutSeconds'].env[0] as string;
/** What the install may add to the base image, in bytes. */
export const DEFAULT_MAX_DEPS_SIZE = 4 * 1024 ** 3;
/** Env override of the deps image cap (setting build.maxDepsSize), a docker size (`4g`, `512m`) or bytes. */
export const MAX_DEPS_SIZE_ENV = DEFINITIONS['build.maxDepsSize'].env[0] as string;
export const MIN_MAX_DEPS_SIZE = 1024 ** 2;

type Settings = ReturnType<typeof currentSettings>;

/**
 * The prepareImage options the settings (file, env: @ca-sandbox/config) give, under their option
 * names; a setting left unset is absent, so an option the caller passes always wins.
 */
export function optionsFromSettings(settings: Settings): Record<string, unknown> {
  const timeoutSeconds = settings.value('build.timeoutSeconds');
  const mirrors = definedEntries({
    npm: settings.value('mirrors.npmRegistry'),
    pip: settings.value('mirrors.pypiIndex'),
    go: settings.value('mirrors.goProxy'),
  });
  return definedEntries({
    caCertificates: settings.value('caCertificates'),
    buildMemory: settings.value('build.memory'),
    buildCpus: settings.value('build.cpus'),
    buildProcesses: settings.value('build.processes'),
    buildFileSize: settings.value('build.fileSizeBytes'),
    buildTimeoutMs: timeoutSeconds === undefined ? undefined : timeoutSeconds * 1000,
    registries: Object.keys(mirrors).length > 0 ? mirrors : undefined,
  });
}

/** The deps cap of the settings (file, env CA_SANDBOX_MAX_DEPS_SIZE), by docker's size rules. */
export function settingMaxDepsSize(settings: Settings): number {
  const setting = settings.get('build.maxDepsSize');
  if (setting.value === undefined) return DEFAULT_MAX_DEPS_SIZE;
  const bytes = parseSize(setting.value.trim());
  if (bytes === undefined || bytes < MIN_MAX_DEPS_SIZE)
    throw new InvalidBuildOptionsError(
      `invalid build.maxDepsSize (from ${setting.from ?? setting.source}): must be a size of at least 1m such as 4g or 512m`,
    );
  return bytes;
}

function definedEntries(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
}
