// A driver process for the SIGKILL test: calls createSandbox and prints phases. The test kills it
// with SIGKILL midway, so nothing in this process gets a chance to clean up.
import { createSandbox } from '../dist/index.js';

const [source, name] = process.argv.slice(2);
await createSandbox(
  { source, name, cloneNetwork: 'bridge' },
  { onPhase: (event) => process.stdout.write(`${JSON.stringify(event)}\n`) },
);
process.stdout.write('created\n');
