import { describe, expect, it } from 'vitest';
import { UsageError } from './errors.js';
import type { SandboxRecord } from './lifecycle-api.js';
import {
  applyImageFilters,
  applyListFilters,
  IMAGE_FILTERS,
  parseListFilters,
  parseListFormat,
  renderListTemplate,
} from './list-format.js';

const NOW = Date.parse('2026-12-01T10:00:00Z');

function record(over: Partial<SandboxRecord>): SandboxRecord {
  return {
    id: 'demo',
    container: 'ca-sbx-demo',
    volume: 'ca-sbx-demo',
    image: 'ca-sbx-base:node',
    imageCacheHit: false,
    imageSource: '',
    dephash: 'abc',
    builder: 'builtin',
    provider: 'node',
    depsInstalled: false,
    toolchain: { node: '22.23.5' },
    network: 'offline',
    runtime: 'runc',
    repo: 'hello',
    source: '/src/hello',
    status: 'running',
    createdAt: '2026-12-01T09:55:00Z',
    egress: [],
    allow: [],
    withClaude: false,
    installFallbacks: [],
    credentials: [],
    ...over,
  };
}

const RECORDS = [
  record({}),
  record({ id: 'other', status: 'exited', runtime: 'runsc', network: 'clone-then-cut', provider: 'python' }),
  record({ id: 'third', status: 'created', repo: 'evil\u001b[31mname' }),
];

describe('parseListFilters / applyListFilters', () => {
  const ids = (entries: string[]) => applyListFilters(RECORDS, parseListFilters(entries)).map((r) => r.id);

  it('ANDs different keys and ORs a repeated key, as docker', () => {
    expect(ids([])).toEqual(['demo', 'other', 'third']);
    expect(ids(['status=running'])).toEqual(['demo']);
    expect(ids(['status=running', 'status=exited'])).toEqual(['demo', 'other']);
    expect(ids(['status=exited', 'runtime=runc'])).toEqual([]);
    expect(ids(['runtime=runsc', 'network=clone-then-cut', 'provider=python'])).toEqual(['other']);
    expect(ids(['id=thi'])).toEqual(['third']);
    expect(ids(['id=th'])).toEqual(['other', 'third']);
    expect(ids(['repo=evil'])).toEqual(['third']);
  });

  it.each(['label=x', 'status', '=running', 'image=node', 'constructor=x'])(
    'refuses %j as a usage error',
    (entry) => {
      expect(() => parseListFilters([entry])).toThrow(UsageError);
      expect(() => parseListFilters([entry])).toThrow(/--filter/);
    },
  );
});

describe('ls --images filters', () => {
  const IMAGES = [
    { id: 'a', repo: 'express', source: '/tmp/express', inUse: true },
    { id: 'b', repo: 'express', source: 'https://github.com/expressjs/express', inUse: false },
    { id: 'c', repo: 'ufo', source: '/tmp/ufo', inUse: false },
  ];
  const ids = (entries: string[]) =>
    applyImageFilters(IMAGES, parseListFilters(entries, IMAGE_FILTERS)).map((image) => image.id);

  it('repo and source are parts, in-use true or false; keys AND-ed, a repeated key OR-ed', () => {
    expect(ids(['repo=expr'])).toEqual(['a', 'b']);
    expect(ids(['source=github.com', 'in-use=false'])).toEqual(['b']);
    expect(ids(['in-use=TRUE'])).toEqual(['a']);
    expect(ids(['repo=ufo', 'repo=express', 'in-use=false'])).toEqual(['b', 'c']);
  });

  it.each(['in-use=yes', 'status=running', 'id=a'])('refuses %j as a usage error', (entry) => {
    expect(() => parseListFilters([entry], IMAGE_FILTERS)).toThrow(UsageError);
  });
});

describe('parseListFormat / renderListTemplate', () => {
  it('renders a template per sandbox, with docker\u2019s \\t and \\n escapes', () => {
    const format = parseListFormat('{{.ID}}\\t{{.Status}}\\t{{ .Runtime }}');
    if (format.kind !== 'template') throw new Error('expected a template');
    expect(renderListTemplate(format, RECORDS.slice(0, 2), NOW)).toEqual([
      'demo\trunning\trunc',
      'other\texited\trunsc',
    ]);
  });

  it('table formats get a header and aligned columns', () => {
    const format = parseListFormat('table {{.ID}}\\t{{.Created}}\\t{{.CacheHit}}');
    if (format.kind !== 'template') throw new Error('expected a template');
    expect(renderListTemplate(format, RECORDS.slice(0, 2), NOW)).toEqual([
      'ID     CREATED  CACHE HIT',
      'demo   5m ago   false',
      'other  5m ago   false',
    ]);
  });

  it('the default table is the columns list has always shown', () => {
    const format = parseListFormat('table');
    if (format.kind !== 'template') throw new Error('expected a template');
    expect(renderListTemplate(format, [], NOW)).toEqual([
      'ID  STATUS  NETWORK  RUNTIME  IMAGE  CREATED  REPO',
    ]);
  });

  it('sanitises every value (names come from labels a repo chose)', () => {
    const format = parseListFormat('{{.Repo}}');
    if (format.kind !== 'template') throw new Error('expected a template');
    const [line] = renderListTemplate(format, [RECORDS[2] as SandboxRecord], NOW);
    expect(line).not.toContain('\u001b');
    expect(line).toMatch(/^evil.*name$/);
  });

  it('{{json .}} prints the record as one JSON line', () => {
    const format = parseListFormat('{{json .}}');
    if (format.kind !== 'template') throw new Error('expected a template');
    const [line] = renderListTemplate(format, [RECORDS[0] as SandboxRecord], NOW);
    expect(JSON.parse(line ?? '')).toEqual(RECORDS[0]);
  });

  it('json is the records; unknown fields are a usage error naming the fields', () => {
    expect(parseListFormat('json')).toEqual({ kind: 'json' });
    expect(() => parseListFormat('{{.Labels}}')).toThrow(UsageError);
    expect(() => parseListFormat('{{.Status | upper}}')).toThrow(/--format/);
  });
});
