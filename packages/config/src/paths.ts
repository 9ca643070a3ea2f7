import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** The env variable that names another configuration file. */
export const CONFIG_ENV = 'CA_SANDBOX_CONFIG';
export const CONFIG_FILE_NAME = 'config.json';
const APP = 'ca-sandbox';

export interface PlatformContext {
  env: Record<string, string | undefined>;
  platform: NodeJS.Platform;
  home: string;
}

function context(partial: Partial<PlatformContext> = {}): PlatformContext {
  return {
    env: partial.env ?? process.env,
    platform: partial.platform ?? process.platform,
    home: partial.home ?? partial.env?.HOME ?? homedir(),
  };
}

/** XDG variables count only when absolute (the spec says to ignore relative ones). */
function xdg(env: PlatformContext['env'], name: string, fallback: string): string {
  const value = env[name];
  return value && isAbsolute(value) ? value : fallback;
}

/** The platform's usual place for ca-sandbox's configuration directory. */
export function configDir(partial?: Partial<PlatformContext>): string {
  const { env, platform, home } = context(partial);
  if (platform === 'darwin') return join(home, 'Library', 'Application Support', APP);
  if (platform === 'win32') return join(env.APPDATA || join(home, 'AppData', 'Roaming'), APP);
  return join(xdg(env, 'XDG_CONFIG_HOME', join(home, '.config')), APP);
}

/** Where data that ca-sandbox writes for the user goes (the MCP server's default output root). */
export function dataDir(partial?: Partial<PlatformContext>): string {
  const { env, platform, home } = context(partial);
  if (platform === 'darwin') return join(home, 'Library', 'Application Support', APP);
  if (platform === 'win32') return join(env.LOCALAPPDATA || join(home, 'AppData', 'Local'), APP);
  return join(xdg(env, 'XDG_DATA_HOME', join(home, '.local', 'share')), APP);
}

/** Where ca-sandbox keeps state of its own (install logs, the image cache's last uses). */
export function stateDir(partial?: Partial<PlatformContext>): string {
  const { env, platform, home } = context(partial);
  if (platform === 'darwin') return join(home, 'Library', 'Application Support', APP, 'state');
  if (platform === 'win32') return join(env.LOCALAPPDATA || join(home, 'AppData', 'Local'), APP, 'state');
  return join(xdg(env, 'XDG_STATE_HOME', join(home, '.local', 'state')), APP);
}

export interface ConfigLocation {
  path: string;
  /** `env` when CA_SANDBOX_CONFIG named it (then it must exist), else the platform default. */
  source: 'env' | 'default';
}

/** The configuration file: CA_SANDBOX_CONFIG, else `<configDir>/config.json`. */
export function configLocation(partial?: Partial<PlatformContext>): ConfigLocation {
  const { env } = context(partial);
  const named = env[CONFIG_ENV];
  if (named) return { path: named, source: 'env' };
  return { path: join(configDir(partial), CONFIG_FILE_NAME), source: 'default' };
}
