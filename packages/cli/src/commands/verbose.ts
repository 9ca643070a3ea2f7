import { sanitizeName } from '@ca-sandbox/docker/contracts';
import type { Output } from '../output.js';

/** Quotes one argv word for display the way a POSIX shell would read it back. */
export function shellQuote(word: string): string {
  if (word !== '' && /^[A-Za-z0-9_./:=@%+,-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** --verbose: every docker argv is printed (sanitised: argv can carry repo-derived names) before it runs. */
export async function traceDocker(out: Output): Promise<void> {
  const { setDockerTracer } = await import('@ca-sandbox/docker');
  setDockerTracer((argv) => {
    out.streams.stderr.write(`${out.dim(`+ docker ${sanitizeName(argv.map(shellQuote).join(' '))}`)}\n`);
  });
}
