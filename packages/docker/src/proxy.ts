/**
 * The variables the docker CLI copies from `proxies` in ~/.docker/config.json into every
 * `docker run` (as env) and `docker build` (as build args), in both cases as the CLI sets them.
 * They often carry credentials (http://user:secret@proxy:3128); the CLI never overrides a name
 * the caller set, so run and build set each of them empty unless the user named it.
 */
export const DOCKER_CLI_PROXY_VARIABLES = [
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'FTP_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'ftp_proxy',
  'no_proxy',
  'all_proxy',
] as const;

const PROXY_NAMES = new Set<string>(DOCKER_CLI_PROXY_VARIABLES.map((name) => name.toUpperCase()));

/**
 * Whether `name` is one of those variables, in any case (curl and npm read `https_proxy` and
 * `HTTPS_PROXY` alike): never set by a repo or a caller where it would reach an image or a box.
 */
export function isProxyVariable(name: string): boolean {
  return PROXY_NAMES.has(name.toUpperCase());
}
