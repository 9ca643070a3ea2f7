// The option combinations the create body and its `docker run` rendering are checked on (unit:
// flag by flag; integration: against docker's own parser). `volume` and `network` name objects
// the integration test makes; the unit test uses them as plain names.
import type { RunOptionsInput } from '../src/options.js';

export interface RunCombo {
  label: string;
  needsNetwork?: boolean;
  options(names: { id: string; volume: string; network: string }): Omit<RunOptionsInput, 'name'>;
}

export const RUN_COMBOS: RunCombo[] = [
  {
    label: 'box, runc, network none, defaults',
    options: ({ id, volume }) => ({ sandboxId: id, image: 'ca-sbx-base:debian', volume }),
  },
  {
    label: 'box, runsc, network none, every limit set, read-only volume, a command',
    options: ({ id, volume }) => ({
      sandboxId: id,
      image: 'ca-sbx-base:debian',
      volume,
      volumeReadOnly: true,
      runtime: 'runsc',
      memory: '512m',
      cpus: 1.5,
      pidsLimit: 64,
      tmpfsSize: '64m',
      maxFileSize: '1g',
      command: ['/usr/bin/git', 'version'],
    }),
  },
  {
    label: 'box on a named network, allowlist dns blackhole, with env and labels',
    needsNetwork: true,
    options: ({ id, volume, network }) => ({
      sandboxId: id,
      image: 'ca-sbx-base:debian',
      volume,
      network,
      dns: 'blackhole',
      env: { FOO: 'bar', HTTPS_PROXY: 'http://proxy.local:3128' },
      labels: { 'ca.sandbox.repo': 'r', 'ca.sandbox.id': 'not-ours' },
    }),
  },
  {
    label: 'helper on bridge, runc',
    options: ({ id, volume }) => ({
      sandboxId: id,
      image: 'ca-sbx-base:git',
      role: 'helper',
      volume,
      network: 'bridge',
      cpus: 0.5,
    }),
  },
  {
    label: 'gateway on a named network with an extra network, env, no volume',
    needsNetwork: true,
    options: ({ id, network }) => ({
      sandboxId: id,
      image: 'ca-sbx-base:debian',
      role: 'gateway',
      network,
      extraNetworks: [`${network}-in`],
      memory: '256m',
      cpus: 1,
      pidsLimit: 128,
      tmpfsSize: '64m',
      env: { CA_SBX_SQUID_CONF: 'http_port 3128\nacl x dst 10.0.0.0/8' },
      command: ['/bin/sh', '-c', 'exec sleep infinity'],
    }),
  },
];
