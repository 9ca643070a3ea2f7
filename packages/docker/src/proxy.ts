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
