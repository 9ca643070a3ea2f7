import { CONFINEMENT_MARKER } from '@ca-sandbox/docker';
import { INSTALL_FALLBACK_MARKER } from './install-fallbacks.js';
import { INSTALL_SCRIPT_MARKER } from './install-scripts.js';
import { LOCKFILE_MARKER } from './providers/node/lockfiles.js';
import { ROOT_SOURCES_MARKER } from './root-sources.js';
import { TOOLCHAIN_MARKER } from './toolchain.js';

// Its own file: build-log.ts sits on the errors → install-log import path, and these markers'
// modules import errors (a cycle that left a marker uninitialised when the bundle loaded).

/** What the install step prints for the host to read back (toolchain, confinement, scripts, fallbacks, lockfiles). */
const RECORD_MARKERS = [
  CONFINEMENT_MARKER,
  TOOLCHAIN_MARKER,
  INSTALL_SCRIPT_MARKER,
  INSTALL_FALLBACK_MARKER,
  ROOT_SOURCES_MARKER,
  LOCKFILE_MARKER,
];

/**
 * Whether a (cleaned) line is one of the install step's records for the host, not progress: a
 * quiet create's "still running" line quotes the install's own last line instead. The records stay
 * in --verbose and the install log (a repo printing one only hides its line from that quote).
 */
export function isInstallRecord(line: string): boolean {
  const trimmed = line.trimStart();
  return RECORD_MARKERS.some((marker) => trimmed.startsWith(marker));
}
