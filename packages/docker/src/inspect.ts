import { z } from 'zod';
import { DockerResponseError } from './errors.js';
import { docker } from './exec-docker.js';

const nullableArray = <T extends z.ZodType>(item: T) =>
  z
    .array(item)
    .nullish()
    .transform((value) => value ?? []);
const nullableRecord = <T extends z.ZodType>(item: T) =>
  z
    .record(z.string(), item)
    .nullish()
    .transform((value) => value ?? {});

export const MountSchema = z.object({
  Type: z.string(),
  Name: z.string().optional(),
  Source: z.string().optional(),
  Destination: z.string(),
  RW: z.boolean().optional(),
});

export const PortBindingSchema = z.object({ HostIp: z.string().optional(), HostPort: z.string().optional() });

/** The fields of `docker container inspect` that the isolation gate and lifecycle rely on. */
export const ContainerInspectSchema = z.object({
  Id: z.string(),
  Name: z.string(),
  Created: z.string().optional(),
  Image: z.string().optional(),
  State: z.object({
    Status: z.string(),
    Running: z.boolean(),
    OOMKilled: z.boolean().optional().default(false),
    ExitCode: z.number().optional(),
    Pid: z.number().optional(),
  }),
  Config: z.object({
    User: z.string().optional().default(''),
    Image: z.string().optional().default(''),
    Env: nullableArray(z.string()),
    Labels: nullableRecord(z.string()),
    WorkingDir: z.string().optional().default(''),
    Cmd: nullableArray(z.string()),
    Entrypoint: nullableArray(z.string()),
  }),
  HostConfig: z.object({
    Binds: nullableArray(z.string()),
    Privileged: z.boolean().optional().default(false),
    CapAdd: nullableArray(z.string()),
    CapDrop: nullableArray(z.string()),
    ReadonlyRootfs: z.boolean().optional().default(false),
    SecurityOpt: nullableArray(z.string()),
    PidsLimit: z.number().nullish(),
    Memory: z.number().optional().default(0),
    MemorySwap: z.number().optional().default(0),
    NanoCpus: z.number().optional().default(0),
    PortBindings: nullableRecord(z.array(PortBindingSchema).nullable()),
    PublishAllPorts: z.boolean().optional().default(false),
    PidMode: z.string().optional().default(''),
    IpcMode: z.string().optional().default(''),
    UTSMode: z.string().optional().default(''),
    UsernsMode: z.string().optional().default(''),
    NetworkMode: z.string().optional().default(''),
    Dns: nullableArray(z.string()),
    Devices: nullableArray(z.unknown()),
    DeviceRequests: nullableArray(z.unknown()),
    VolumesFrom: nullableArray(z.string()),
    Runtime: z.string().optional().default(''),
    Init: z.boolean().nullish(),
    Tmpfs: nullableRecord(z.string()),
    Mounts: nullableArray(
      z.object({ Type: z.string(), Source: z.string().optional(), Target: z.string() }).loose(),
    ),
  }),
  Mounts: nullableArray(MountSchema),
  NetworkSettings: z
    .object({
      Networks: nullableRecord(
        z.object({ IPAddress: z.string().optional(), NetworkID: z.string().optional() }).loose(),
      ),
      Ports: nullableRecord(z.array(PortBindingSchema).nullable()),
    })
    .optional()
    .transform((value) => value ?? { Networks: {}, Ports: {} }),
});
export type ContainerInspect = z.infer<typeof ContainerInspectSchema>;

export const VolumeInspectSchema = z.object({
  Name: z.string(),
  Driver: z.string(),
  Labels: nullableRecord(z.string()),
  Options: nullableRecord(z.string()),
  Mountpoint: z.string().optional(),
});
export type VolumeInspect = z.infer<typeof VolumeInspectSchema>;

export const ImageInspectSchema = z.object({
  Id: z.string(),
  RepoTags: nullableArray(z.string()),
  Created: z.string().optional(),
  Config: z
    .object({ Env: nullableArray(z.string()), Labels: nullableRecord(z.string()) })
    .loose()
    .nullish()
    .transform((value) => value ?? { Env: [], Labels: {} }),
});
export type ImageInspect = z.infer<typeof ImageInspectSchema>;

function parseFirst<T extends z.ZodType>(schema: T, what: string, stdout: string): z.infer<T> {
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    throw new DockerResponseError(`docker ${what} inspect did not return JSON`);
  }
  const first = Array.isArray(json) ? json[0] : json;
  const parsed = schema.safeParse(first);
  if (!parsed.success) {
    throw new DockerResponseError(
      `docker ${what} inspect has an unexpected shape: ${parsed.error.issues[0]?.message ?? ''}`,
    );
  }
  return parsed.data;
}

/** `docker container inspect <ref>` parsed; throws DockerCommandError when it does not exist. */
export async function inspectContainer(ref: string): Promise<ContainerInspect> {
  const { stdout } = await docker(['container', 'inspect', '--', ref]);
  return parseFirst(ContainerInspectSchema, 'container', stdout);
}

/** Parses the JSON text of `docker container inspect` (for checks over documents we did not fetch). */
export function parseContainerInspect(json: unknown): ContainerInspect {
  return parseFirst(
    ContainerInspectSchema,
    'container',
    typeof json === 'string' ? json : JSON.stringify(json),
  );
}

export async function inspectVolume(name: string): Promise<VolumeInspect> {
  const { stdout } = await docker(['volume', 'inspect', '--', name]);
  return parseFirst(VolumeInspectSchema, 'volume', stdout);
}

/** The image's inspect document, or undefined when it is not in the local store. */
export async function inspectImage(ref: string): Promise<ImageInspect | undefined> {
  const result = await docker(['image', 'inspect', '--', ref], { allowFailure: true });
  if (result.exitCode !== 0) return undefined;
  return parseFirst(ImageInspectSchema, 'image', result.stdout);
}

export async function imageExists(ref: string): Promise<boolean> {
  return (await inspectImage(ref)) !== undefined;
}
