import { BOX_USER, engine } from '@ca-sandbox/docker';

/**
 * A container that lives only while the create that made it does (the clone helper, the gateway of
 * the clone and the install): its main process watches a file on its tmpfs that the create touches
 * every HEARTBEAT_INTERVAL_MS. When the create dies (SIGKILL, a crash) nobody touches it any more,
 * the watch ends within HEARTBEAT_STALE_SECONDS and, with PID 1 gone, the kernel kills the rest of
 * the container: an orphan stops on its own (it is removed by `prune`).
 */
export const HEARTBEAT_FILE = '/tmp/.ca-sbx-alive';
const TOUCH_BIN = '/usr/bin/touch';
/** How often the create touches it. */
export const HEARTBEAT_INTERVAL_MS = 10_000;
/** A watched container whose heartbeat is older than this stops. */
export const HEARTBEAT_STALE_SECONDS = 90;

/**
 * The shell lines of the watch: they return once the heartbeat is older than `$1` seconds, or,
 * with `alsoWhile`, as soon as that condition fails (the watched server exited).
 */
export function heartbeatWatch(alsoWhile = 'true'): string {
  return [
    `touch ${HEARTBEAT_FILE}`,
    `while ${alsoWhile} && [ $(( $(date +%s) - $(stat -c %Y ${HEARTBEAT_FILE} 2>/dev/null || echo 0) )) -lt "$1" ]; do sleep 2; done`,
  ].join('\n');
}

/**
 * Touches a container's heartbeat every HEARTBEAT_INTERVAL_MS until the returned stop is called.
 * A failed touch is not an error here: if the container is gone the create's next step says so.
 */
export function keepAlive(container: string): () => void {
  let inFlight = false;
  const timer = setInterval(() => {
    if (inFlight) return;
    inFlight = true;
    void engine.exec
      .internal(container, [TOUCH_BIN, HEARTBEAT_FILE], {
        user: BOX_USER,
        timeoutMs: HEARTBEAT_INTERVAL_MS * 3,
      })
      .catch(() => undefined)
      .finally(() => {
        inFlight = false;
      });
  }, HEARTBEAT_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
