import { z } from 'zod';
import { engineJson, engineJsonOrMissing, segment } from './engine-client.js';
import { DockerResponseError } from './errors.js';

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
    Paused: z.boolean().optional().default(false),
    OOMKilled: z.boolean().optional().default(false),
    ExitCode: z.number().optional(),
    Pid: z.number().optional(),
    StartedAt: z.string().optional(),
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
    Ulimits: nullableArray(z.object({ Name: z.string(), Soft: z.number(), Hard: z.number() }).loose()),
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
    LogConfig: z
      .object({ Type: z.string().optional().default('') })
      .loose()
      .nullish()
      .transform((value) => ({ Type: value?.Type ?? '' })),
  }),
  Mounts: nullableArray(MountSchema),
  /** With `size`: bytes written in the container's layer, and the whole of its filesystem. */
  SizeRw: z.number().optional(),
  SizeRootFs: z.number().optional(),
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
  Size: z.number().optional(),
  Created: z.string().optional(),
  Config: z
    .object({
      Env: nullableArray(z.string()),
      Labels: nullableRecord(z.string()),
      Cmd: nullableArray(z.string()),
      Entrypoint: nullableArray(z.string()),
    })
    .loose()
    .nullish()
    .transform((value) => value ?? { Env: [], Labels: {}, Cmd: [], Entrypoint: [] }),
  /** Where the storage driver keeps the image's layers (overlay2: UpperDir and LowerDir, colon-separated). */
  GraphDriver: z
    .object({ Name: z.string().optional().default(''), Data: nullableRecord(z.string()) })
    .loose()
    .nullish()
    .transform((value) => ({ Name: value?.Name ?? '', Data: value?.Data ?? {} })),
});
export type ImageInspect = z.infer<typeof ImageInspectSchema>;

/** The fields of `docker network inspect` that network setup and its gates read. */
export const NetworkInspectSchema = z.object({
  Name: z.string(),
  Id: z.string(),
  Driver: z.string().optional().default(''),
  Internal: z.boolean().optional(),
  EnableIPv6: z.boolean().optional(),
  Labels: nullableRecord(z.string()),
  Options: nullableRecord(z.string()),
  IPAM: z
    .object({
      Config: nullableArray(
        z.object({ Subnet: z.string().optional(), Gateway: z.string().optional() }).loose(),
      ),
    })
    .loose()
    .nullish()
    .transform((value) => value ?? { Config: [] }),
  Containers: nullableRecord(z.object({ Name: z.string().optional() }).loose()),
});
export type NetworkInspect = z.infer<typeof NetworkInspectSchema>;

/** One answer of the engine checked against its schema: DockerResponseError on another shape. */
export function parseAnswer<T extends z.ZodType>(schema: T, what: string, json: unknown): z.infer<T> {
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new DockerResponseError(
      `docker ${what} has an unexpected shape: ${parsed.error.issues[0]?.message ?? ''}`,
    );
  }
  return parsed.data;
}

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

/** `docker container inspect <ref>` parsed; throws DockerNotFoundError when it does not exist. */
export async function inspectContainer(
  ref: string,
  options: { size?: boolean } = {},
): Promise<ContainerInspect> {
  const path = `/containers/${segment(ref)}/json${options.size ? '?size=1' : ''}`;
  return parseAnswer(
    ContainerInspectSchema,
    'container inspect',
    await engineJson('GET', path, { verb: 'container inspect' }),
  );
}

/** Parses the JSON text of `docker container inspect` (for checks over documents we did not fetch). */
export function parseContainerInspect(json: unknown): ContainerInspect {
  return parseFirst(
    ContainerInspectSchema,
    'container',
    typeof json === 'string' ? json : JSON.stringify(json),
  );
}

/** `docker volume inspect <name>` parsed; throws DockerNotFoundError when it does not exist. */
export async function inspectVolume(name: string): Promise<VolumeInspect> {
  const answer = await engineJson('GET', `/volumes/${segment(name)}`, { verb: 'volume inspect' });
  return parseAnswer(VolumeInspectSchema, 'volume inspect', answer);
}

/** The image's inspect document, or undefined when it is not in the local store. */
export async function inspectImage(ref: string): Promise<ImageInspect | undefined> {
  const answer = await engineJsonOrMissing(`/images/${segment(ref)}/json`, 'image inspect');
  return answer === undefined ? undefined : parseAnswer(ImageInspectSchema, 'image inspect', answer);
}

export async function imageExists(ref: string): Promise<boolean> {
  return (await inspectImage(ref)) !== undefined;
}
