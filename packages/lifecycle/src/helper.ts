import { SH_BIN } from '@ca-sandbox/docker';
import { HEARTBEAT_STALE_SECONDS, heartbeatWatch, keepAlive } from '@ca-sandbox/run';

/**
 * The helper's main process: alive while its create is (the heartbeat of @ca-sandbox/run). When
 * the create dies nobody touches the heartbeat any more, the loop ends within
 * HEARTBEAT_STALE_SECONDS, and with PID 1 gone the kernel kills the rest of the container (a clone
 * still running, a tar, a find): an orphaned helper no longer keeps fetching for ten minutes.
 */
export const HELPER_COMMAND = [
  SH_BIN,
  '-c',
  heartbeatWatch(),
  'ca-sbx-helper',
  String(HEARTBEAT_STALE_SECONDS),
];

/** Touches the helper's heartbeat until the returned stop is called. */
export const keepHelperAlive = keepAlive;
