import { z } from 'zod';
import { engineJson } from './engine-client.js';
import { DockerResponseError } from './errors.js';

const InfoSchema = z.object({
  ServerVersion: z.string(),
  Runtimes: z
    .record(z.string(), z.unknown())
    .nullish()
    .transform((value) => value ?? {}),
  DefaultRuntime: z.string().optional().default('runc'),
  OperatingSystem: z.string().optional().default(''),
  Driver: z.string().optional().default(''),
  CgroupVersion: z.string().optional().default(''),
  NCPU: z.number().int().nonnegative().optional().default(0),
  MemTotal: z.number().int().nonnegative().optional().default(0),
  DockerRootDir: z.string().optional().default(''),
  SecurityOptions: z
    .array(z.string())
    .nullish()
    .transform((value) => value ?? []),
});

export interface DockerInfo {
  serverVersion: string;
  runtimes: string[];
  /** The arguments each runtime is registered with (`runsc`: e.g. `['--network=none']`). */
  runtimeArgs: Record<string, string[]>;
  defaultRuntime: string;
  operatingSystem: string;
  storageDriver: string;
  cgroupVersion: string;
  /**
   * The daemon's security options as `docker info` lists them, e.g. `name=seccomp,profile=default`,
   * `name=apparmor`, `name=userns`. Empty when the daemon reports none (seccomp compiled out).
   */
  securityOptions: string[];
  /** Cores the engine can give containers (`NCPU`; 0 when not reported). `--cpus` cannot exceed it. */
  cpus: number;
  /** The engine host's memory in bytes (`MemTotal`; 0 when not reported). */
  memTotalBytes: number;
  /** Where the engine keeps images and layers on its host (`DockerRootDir`; '' when not reported). */
  rootDir: string;
}

let cached: Promise<DockerInfo> | undefined;

/**
 * `docker info` parsed (cached for the process: runtimes do not change under us).
 * Throws DockerUnavailableError when the daemon does not answer.
 */
export function dockerInfo(options: { fresh?: boolean } = {}): Promise<DockerInfo> {
  if (!cached || options.fresh) {
    cached = readInfo();
    cached.catch(() => {
      cached = undefined;
    });
  }
  return cached;
}

async function readInfo(): Promise<DockerInfo> {
  const answer = await engineJson('GET', '/info', { verb: 'info', timeoutMs: 20_000 });
  return parseDockerInfo(JSON.stringify(answer));
}

/** Parses the output of `docker info --format '{{json .}}'`; throws DockerResponseError on odd shapes. */
export function parseDockerInfo(stdout: string): DockerInfo {
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    throw new DockerResponseError('docker info did not return JSON');
  }
  const parsed = InfoSchema.safeParse(json);
  if (!parsed.success) throw new DockerResponseError('docker info has an unexpected shape');
  const info = parsed.data;
  return {
    serverVersion: info.ServerVersion,
    runtimes: Object.keys(info.Runtimes).sort(),
    runtimeArgs: Object.fromEntries(
      Object.entries(info.Runtimes).map(([name, value]) => [name, runtimeArgsOf(value)]),
    ),
    defaultRuntime: info.DefaultRuntime,
    operatingSystem: info.OperatingSystem,
    storageDriver: info.Driver,
    cgroupVersion: info.CgroupVersion,
    securityOptions: info.SecurityOptions,
    cpus: info.NCPU,
    memTotalBytes: info.MemTotal,
    rootDir: info.DockerRootDir,
  };
}

function runtimeArgsOf(value: unknown): string[] {
  const args = (value as { runtimeArgs?: unknown } | null)?.runtimeArgs;
  return Array.isArray(args) ? args.filter((arg): arg is string => typeof arg === 'string') : [];
}

/**
 * True when a runtime is registered without a network of its own (gVisor's `--network=none`): its
 * containers have a loopback only, whatever docker network they are put on.
 */
export function runtimeIsNetworkless(info: Pick<DockerInfo, 'runtimeArgs'>, runtime: string): boolean {
  return (info.runtimeArgs[runtime] ?? []).some((arg) => /^--?network=none$/.test(arg));
}
