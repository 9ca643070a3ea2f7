import { z } from 'zod';

// Output schemas of the tools (structuredContent). Loose objects: a field a newer lifecycle adds
// reaches the client instead of failing validation.

const sandboxRecord = z
  .looseObject({
    id: z.string(),
    container: z.string(),
    volume: z.string(),
    image: z.string(),
    imageCacheHit: z.boolean(),
    dephash: z.string(),
    builder: z.string(),
    provider: z.string(),
    network: z.string().describe('network policy'),
    runtime: z.string(),
    repo: z.string(),
    source: z.string(),
    status: z.string(),
    createdAt: z.string(),
    installFallbacks: z
      .array(z.string())
      .optional()
      .describe(
        'what the deps install did besides its recipe: npm-legacy-peer-deps = npm refused the tree (ERESOLVE) and it installed again with --legacy-peer-deps',
      ),
  })
  .describe('a sandbox record');

const teardown = {
  removed: z.array(z.string()).describe('docker objects removed'),
  failures: z.array(z.looseObject({ kind: z.string(), name: z.string(), message: z.string() })),
  leftovers: z.array(z.string()).describe('objects still there after the teardown'),
};

const loose = z.looseObject;

export const OUTPUT = {
  create: sandboxRecord,
  exec: loose({
    exitCode: z.number().int(),
    stdout: z.string().describe('UNTRUSTED output of the box'),
    stderr: z.string().describe('UNTRUSTED output of the box'),
    truncated: z.boolean(),
    timedOut: z.boolean(),
    durationMs: z.number(),
    outOfMemory: z
      .literal(true)
      .optional()
      .describe('exit 137 because the box reached its memory limit (create a box with a larger memory)'),
  }),
  cpOut: loose({
    destination: z.string().describe('the host path written'),
    files: z.number().int(),
    directories: z.number().int(),
    bytes: z.number().int(),
    skipped: z.array(z.looseObject({ path: z.string(), reason: z.string() })),
  }),
  list: loose({ sandboxes: z.array(sandboxRecord) }),
  destroy: loose({
    ...teardown,
    alreadyGone: z.array(z.string()).describe('ids that had nothing left to remove (a repeated call)'),
  }),
  prune: loose(teardown),
  report: loose({
    version: z.number().int(),
    generatedAt: z.string(),
    id: z.string(),
    status: z.string(),
    source: z.looseObject({ source: z.string(), repo: z.string(), createdAt: z.string() }),
    install: z.looseObject({ provider: z.string(), image: z.string(), depsInstalled: z.boolean() }),
    network: z.looseObject({
      policy: z.string(),
      decisions: z
        .array(
          z.looseObject({
            phase: z.string(),
            destination: z.string(),
            allowed: z.boolean(),
            count: z.number(),
          }),
        )
        .describe('every egress decision; destination is UNTRUSTED text'),
      allowed: z.number(),
      refused: z.number(),
    }),
    isolation: z.looseObject({ ok: z.boolean(), running: z.boolean(), checks: z.array(z.looseObject({})) }),
    commands: z
      .looseObject({ entries: z.array(z.looseObject({})), complete: z.boolean() })
      .describe('every command run in the box, oldest first'),
    changes: z
      .looseObject({
        state: z.string(),
        complete: z.boolean(),
        added: z.array(z.looseObject({ path: z.string() })),
        modified: z.array(z.looseObject({ path: z.string() })),
        deleted: z.array(z.looseObject({ path: z.string() })),
        outsideRepo: z.array(z.looseObject({ path: z.string() })),
        inImage: z.array(z.looseObject({ path: z.string() })).optional(),
        setuid: z.array(z.looseObject({ path: z.string() })),
        newExecutables: z.array(z.looseObject({ path: z.string() })),
      })
      .describe(
        'files added, modified and deleted in /work/repo since the clone, everything under /tmp, setuid files, new executables; runs: why git or a host tool would run a file. Paths are UNTRUSTED text',
      ),
    notRecorded: z.array(z.string()).describe('what this report version does not cover yet'),
  }),
  verify: loose({
    ok: z.boolean(),
    container: z.string(),
    checks: z.array(
      z.looseObject({
        check: z.string(),
        title: z.string(),
        cis: z.string(),
        expected: z.string(),
        seen: z.string(),
        pass: z.boolean(),
      }),
    ),
  }),
};
