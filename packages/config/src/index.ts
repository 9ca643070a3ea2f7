export { ConfigError } from './errors.js';
export {
  CONFIG_ENV,
  type ConfigLocation,
  configDir,
  configLocation,
  dataDir,
  type PlatformContext,
} from './paths.js';
export {
  BUILD_DEFAULTS,
  currentSettings,
  DEFAULT_BASE_IMAGES,
  DEFAULT_GATEWAY_IMAGE,
  DEFAULT_HELPER_IMAGE,
  DEFINITIONS,
  ImageRefSchema,
  type LoadOptions,
  loadSettings,
  PROVIDERS,
  type Provider,
  readConfigFile,
  SEEDED_BASE_IMAGES,
  type Setting,
  type SettingKey,
  type SettingSource,
  type Settings,
  type SettingValue,
} from './settings.js';
