// Preloaded with `node --import`: records every module URL the process loads and writes the list
// to $TRACE_IMPORTS_OUT on exit (used to prove that start-up stays lazy).
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const seen = new Set();
registerHooks({
  load(url, context, next) {
    seen.add(url);
    return next(url, context);
  },
});
process.on('exit', () => {
  if (process.env.TRACE_IMPORTS_OUT) writeFileSync(process.env.TRACE_IMPORTS_OUT, JSON.stringify([...seen]));
});
