import { BOX_USER, docker, internalExecArgs, SH_BIN } from '@ca-sandbox/docker';

/** The helper's heartbeat file, on its tmpfs. */
export const HEARTBEAT_FILE = '/tmp/.ca-sbx-alive';
const TOUCH_BIN = '/usr/bin/touch';
/** How often the create touches it. */
export const HEARTBEAT_INTERVAL_MS = 10_000;
/** A helper whose heartbeat is older than this stops, and every process in it dies with it. */
export const HEARTBEAT_STALE_SECONDS = 90;

/**
 * The helper's main process: alive while its create is. When the create dies (SIGKILL, a crash)
 * nobody touches the heartbeat any more, the loop ends within HEARTBEAT_STALE_SECONDS, and with
 * PID 1 gone the kernel kills the rest of the container (a clone still running, a tar, a find):
 * an orphaned helper no longer keeps fetching for ten minutes.
 */
export const HELPER_COMMAND = [
  SH_BIN,
  '-c',
  [
    `touch ${HEARTBEAT_FILE}`,
    `while [ $(( $(date +%s) - $(stat -c %Y ${HEARTBEAT_FILE} 2>/dev/null || echo 0) )) -lt "$1" ]; do sleep 2; done`,
  ].join('\n'),
  'ca-sbx-helper',
  String(HEARTBEAT_STALE_SECONDS),
];

/**
 * Touches the helper's heartbeat every HEARTBEAT_INTERVAL_MS until the returned stop is called.
 * A failed touch is not an error here: if the helper is gone the create's next step says so.
 */
export function keepHelperAlive(helper: string): () => void {
  let inFlight = false;
  const timer = setInterval(() => {
    if (inFlight) return;
    inFlight = true;
    void docker(internalExecArgs(helper, [TOUCH_BIN, HEARTBEAT_FILE], { user: BOX_USER }), {
      allowFailure: true,
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
