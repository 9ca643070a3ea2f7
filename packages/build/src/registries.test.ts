import { describe, expect, it } from 'vitest';
import { InvalidBuildOptionsError } from './errors.js';
import {
  maskSecrets,
  REGISTRY_ENV,
  registryInstallEnv,
  registrySecrets,
  resolveRegistries,
} from './registries.js';

describe('resolveRegistries', () => {
  it('takes the option over the environment, and the environment when no option is given', () => {
    const env = {
      [REGISTRY_ENV.npm]: 'https://npm.corp.example/',
      [REGISTRY_ENV.pip]: ' http://10.0.0.5:8080/simple ',
      [REGISTRY_ENV.go]: 'https://goproxy.corp.example,direct',
    };
    expect(resolveRegistries(undefined, env)).toEqual({
      npm: 'https://npm.corp.example/',
      pip: 'http://10.0.0.5:8080/simple',
      go: 'https://goproxy.corp.example,direct',
    });
    expect(resolveRegistries({ npm: 'https://other.example/' }, env).npm).toBe('https://other.example/');
    expect(resolveRegistries(undefined, {})).toEqual({});
  });

  it('refuses what is not an http(s) URL (GOPROXY syntax for go), naming the source', () => {
    expect(() => resolveRegistries(undefined, { [REGISTRY_ENV.npm]: 'file:///etc/passwd' })).toThrow(
      /invalid CA_SANDBOX_NPM_REGISTRY: must be an http\(s\) URL/,
    );
    expect(() => resolveRegistries({ pip: 'https://x.example/\nRUN evil' })).toThrow(
      InvalidBuildOptionsError,
    );
    expect(() => resolveRegistries({ pip: "https://x.example/'; rm -rf /" })).toThrow(/registries\.pip/);
    expect(() => resolveRegistries({ go: 'https://a.example|ftp://b' })).toThrow(/GOPROXY syntax/);
    expect(resolveRegistries({ go: 'off' })).toEqual({ go: 'off' });
  });
});

describe('registryInstallEnv', () => {
  it('sets each tool of the provider, trusts a plain-http PyPI host, nothing for other providers', () => {
    const registries = { npm: 'https://npm.example/', pip: 'http://mirror:8080/simple', go: 'http://g:1' };
    expect(registryInstallEnv('node', registries).map((e) => e.name)).toEqual([
      'npm_config_registry',
      'YARN_REGISTRY',
      'YARN_NPM_REGISTRY_SERVER',
    ]);
    expect(registryInstallEnv('python', registries)).toEqual(
      expect.arrayContaining([
        { name: 'PIP_INDEX_URL', value: 'http://mirror:8080/simple' },
        { name: 'PIP_TRUSTED_HOST', value: 'mirror:8080' },
        { name: 'UV_DEFAULT_INDEX', value: 'http://mirror:8080/simple' },
      ]),
    );
    expect(registryInstallEnv('go', registries)).toEqual([{ name: 'GOPROXY', value: 'http://g:1' }]);
    expect(registryInstallEnv('rust', registries)).toEqual([]);
    expect(registryInstallEnv('python', { pip: 'https://secure/simple' }).map((e) => e.name)).not.toContain(
      'PIP_TRUSTED_HOST',
    );
  });

  it('masks credentials of mirror URLs in log lines', () => {
    const secrets = registrySecrets({
      npm: 'https://bob:s3cret@npm.example/',
      go: 'https://t0k@g.example,direct',
    });
    expect(secrets).toHaveLength(2);
    const line =
      "export npm_config_registry='https://bob:s3cret@npm.example/' GOPROXY=https://t0k@g.example,direct";
    const masked = maskSecrets(line, secrets);
    expect(masked).not.toMatch(/s3cret|t0k/);
    expect(masked).toContain('https://***@npm.example/');
    expect(masked).toContain('https://***@g.example');
  });
});
