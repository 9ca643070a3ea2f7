import { ImageBuildError } from '@ca-sandbox/build';
import { CaSandboxError, DockerCommandError, DockerUnavailableError } from '@ca-sandbox/docker';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeError, exitCodeFor, optionName, zodSentence } from './error-report.js';
import { LeftoversError, PrerequisiteError, UsageError } from './errors.js';

describe('exitCodeFor', () => {
  it('maps usage → 2, prerequisite → 3, failure → 1', () => {
    expect(exitCodeFor('usage')).toBe(2);
    expect(exitCodeFor('prerequisite')).toBe(3);
    expect(exitCodeFor('failure')).toBe(1);
  });
});

describe('describeError', () => {
  it('keeps code, kind and hint of our errors', () => {
    const report = describeError(new DockerUnavailableError('the daemon does not answer'));
    expect(report).toMatchObject({ code: 'DOCKER_UNAVAILABLE', kind: 'prerequisite' });
    expect(report.hint).toMatch(/docker/i);
    expect(describeError(new PrerequisiteError('no nixpacks', 'install it'))).toMatchObject({
      kind: 'prerequisite',
      hint: 'install it',
    });
    expect(describeError(new UsageError('bad'))).toMatchObject({
      kind: 'usage',
      code: 'USAGE',
      message: 'bad',
    });
    expect(describeError(new LeftoversError(['ca-sbx-x']))).toMatchObject({
      kind: 'failure',
      code: 'TEARDOWN_INCOMPLETE',
    });
  });

  it("carries a failed install's cause lines and log file, also through a create's cleanup error", () => {
    const build = new ImageBuildError('ca-sbx:x-1', 1, 'tail', undefined, {
      details: ['npm error code E404', 'npm error 404 Not Found - GET https://r/nope'],
      logFile: '/s/ca-sandbox/logs/x.log',
    });
    expect(describeError(build)).toEqual({
      code: 'IMAGE_BUILD_FAILED',
      kind: 'failure',
      message:
        'dependency install failed (docker build of ca-sbx:x-1 exited 1): npm error 404 Not Found - GET https://r/nope',
      hint: 'full install log: /s/ca-sandbox/logs/x.log',
      details: ['npm error code E404', 'npm error 404 Not Found - GET https://r/nope'],
      logFile: '/s/ca-sandbox/logs/x.log',
    });
    const wrapped = Object.assign(new Error('cleanup left objects'), {
      code: 'CREATE_CLEANUP_INCOMPLETE',
      cause: build,
    });
    expect(describeError(wrapped).details).toHaveLength(2);
    expect(describeError(new Error('plain'))).not.toHaveProperty('details');
  });

  it('names the flag of a limit out of range (lifecycle LimitError: option, detail)', async () => {
    const { LimitError } = await import('@ca-sandbox/lifecycle');
    expect(describeError(new LimitError('memory', "1k is below docker's minimum of 6 MiB"))).toEqual({
      code: 'LIMIT_OUT_OF_RANGE',
      kind: 'usage',
      message: "invalid value for --memory: 1k is below docker's minimum of 6 MiB",
    });
  });

  it('treats a docker command failure as a failure', () => {
    const report = describeError(new DockerCommandError(['rm', 'x'], 1, 'Error: No such container: x'));
    expect(report).toMatchObject({ kind: 'failure', code: 'DOCKER_FAILED' });
    expect(exitCodeFor(report.kind)).toBe(1);
  });

  it('turns a zod error into one sentence naming the bad option', () => {
    const schema = z.strictObject({ cpus: z.number().positive(), baseImage: z.string() });
    const parsed = schema.safeParse({ cpus: -1, baseImage: 'x', bogus: 1 });
    if (parsed.success) throw new Error('expected a failure');
    const report = describeError(parsed.error);
    expect(report.kind).toBe('usage');
    expect(report.code).toBe('INVALID_OPTIONS');
    expect(report.message).toMatch(/--cpus/);
    expect(report.message).toMatch(/unknown option --bogus/);
    expect(report.message).not.toMatch(/\n/);
  });

  it('names the option of a zod error wrapped as the cause of a usage error', () => {
    const parsed = z.object({ memory: z.string().regex(/^\d+[mg]$/) }).safeParse({ memory: 'lots' });
    if (parsed.success) throw new Error('expected a failure');
    class WrappedOptionsError extends CaSandboxError {
      readonly code = 'INVALID_OPTIONS';
      readonly kind = 'usage';
    }
    const error = new WrappedOptionsError('invalid options', { cause: parsed.error });
    expect(describeError(error).message).toMatch(/invalid options: invalid value for --memory/);
  });

  it('reads our errors by the base alone: a look-alike plain Error is internal', () => {
    const lookAlike = Object.assign(new Error('boom'), { code: 'SANDBOX_EXISTS', kind: 'usage', hint: 'h' });
    expect(describeError(lookAlike)).toEqual({ code: 'INTERNAL', kind: 'failure', message: 'boom' });
  });

  it("reads an error of the base's other copy (the exec fast path's second bundle) by its brand", () => {
    const foreign = Object.assign(Object.create({ [Symbol.for('ca-sandbox.error')]: true }), {
      code: 'DOCKER_UNAVAILABLE',
      kind: 'prerequisite',
      message: 'Docker is not available: x',
      hint: 'start it',
    });
    expect(describeError(foreign)).toEqual({
      code: 'DOCKER_UNAVAILABLE',
      kind: 'prerequisite',
      message: 'Docker is not available: x',
      hint: 'start it',
    });
    expect(exitCodeFor(describeError(foreign).kind)).toBe(3);
  });

  it('reports anything else as an internal failure without a stack', () => {
    const report = describeError(new TypeError('x is not a function'));
    expect(report).toEqual({ code: 'INTERNAL', kind: 'failure', message: 'x is not a function' });
    expect(describeError('a string')).toMatchObject({ kind: 'failure', message: 'a string' });
    expect(describeError(undefined)).toMatchObject({ kind: 'failure' });
  });

  it('ignores a malformed code or kind', () => {
    const error = Object.assign(new Error('boom'), { code: 'ENOENT; rm', kind: 'weird' });
    expect(describeError(error)).toMatchObject({ code: 'INTERNAL', kind: 'failure' });
    expect(describeError(new UsageError('boom', 'ENOENT; rm'))).toMatchObject({
      code: 'INTERNAL',
      kind: 'usage',
    });
  });
});

describe('option names', () => {
  it('spells fields the way the user typed them', () => {
    expect(optionName('baseImage')).toBe('--base-image');
    expect(optionName('keepVolume')).toBe('--keep-volume');
    expect(optionName('timeoutMs')).toBe('--timeout');
    expect(optionName('source')).toBe('<repo-url-or-path>');
    expect(zodSentence([{ code: 'custom', path: ['maxBytes'], message: 'Too big' }])).toBe(
      'invalid value for --max-bytes: too big',
    );
  });
});
