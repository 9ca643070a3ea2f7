// `list --filter` and `list --format`: what scripts read. Kept apart from list.ts (the command).

import { safeJsonStringify, sanitizeName } from '@ca-sandbox/docker/contracts';
import { UsageError } from './errors.js';
import type { SandboxRecord } from './lifecycle-api.js';

/** `5m ago` style age of an ISO timestamp (the raw value if it does not parse). */
export function age(createdAt: string, now = Date.now()): string {
  const at = Date.parse(createdAt);
  if (Number.isNaN(at)) return createdAt;
  const seconds = Math.max(0, Math.round((now - at) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86_400)}d ago`;
}

/** The fields of `--format` templates (`{{.ID}}`), with the table header each one gets. */
export const LIST_FIELDS: Record<
  string,
  { header: string; value: (r: SandboxRecord, now: number) => string }
> = {
  ID: { header: 'ID', value: (r) => r.id },
  Status: { header: 'STATUS', value: (r) => r.status },
  Network: { header: 'NETWORK', value: (r) => r.network },
  Runtime: { header: 'RUNTIME', value: (r) => r.runtime },
  Image: { header: 'IMAGE', value: (r) => r.image },
  Created: { header: 'CREATED', value: (r, now) => age(String(r.createdAt), now) },
  CreatedAt: { header: 'CREATED AT', value: (r) => String(r.createdAt) },
  Repo: { header: 'REPO', value: (r) => r.repo },
  Source: { header: 'SOURCE', value: (r) => r.source },
  Provider: { header: 'PROVIDER', value: (r) => r.provider },
  Builder: { header: 'BUILDER', value: (r) => r.builder },
  Container: { header: 'CONTAINER', value: (r) => r.container },
  Volume: { header: 'VOLUME', value: (r) => r.volume },
  Dephash: { header: 'DEPHASH', value: (r) => r.dephash },
  CacheHit: { header: 'CACHE HIT', value: (r) => String(r.imageCacheHit) },
  ImageSource: { header: 'IMAGE SOURCE', value: (r) => r.imageSource },
};

/** The default table, as `list` has always printed it. */
export const DEFAULT_TABLE =
  'table {{.ID}}\t{{.Status}}\t{{.Network}}\t{{.Runtime}}\t{{.Image}}\t{{.Created}}\t{{.Repo}}';

/**
 * `--filter key=value`: keys and how each one matches. Different keys are AND-ed; a key given
 * twice matches either value, as docker's filters do (`--filter status=running --filter status=exited`).
 */
export const LIST_FILTERS: Record<
  string,
  { describe: string; match: (r: SandboxRecord, value: string) => boolean }
> = {
  id: { describe: 'part of the id', match: (r, value) => r.id.includes(value) },
  status: { describe: 'docker state: running, exited, ...', match: (r, value) => r.status === value },
  network: { describe: 'offline, clone-then-cut or allowlist', match: (r, value) => r.network === value },
  runtime: { describe: 'runc or runsc', match: (r, value) => r.runtime === value },
  provider: { describe: 'node, python, go, rust, plain', match: (r, value) => r.provider === value },
  repo: { describe: 'part of the repo name', match: (r, value) => r.repo.includes(value) },
};

/** One image of `ls --images` (the lifecycle's cache listing row), as the image filters see it. */
export interface ListedImage {
  repo: string;
  source: string;
  inUse: boolean;
}

/** `ls --images --filter key=value`: the image cache's keys (same rules as LIST_FILTERS). */
export const IMAGE_FILTERS: Record<
  string,
  { describe: string; match: (image: ListedImage, value: string) => boolean; values?: string[] }
> = {
  repo: { describe: 'part of the repo name', match: (image, value) => image.repo.includes(value) },
  source: { describe: 'part of the source', match: (image, value) => image.source.includes(value) },
  'in-use': {
    describe: 'true or false',
    match: (image, value) => String(image.inUse) === value.trim().toLowerCase(),
    values: ['true', 'false'],
  },
};

export type ListFilter = Map<string, string[]>;

/** Parses repeated `--filter key=value`; an unknown key or a missing `=` is a usage error. */
export function parseListFilters(
  entries: readonly string[],
  table: Record<string, { describe: string; values?: string[] }> = LIST_FILTERS,
): ListFilter {
  const filters: ListFilter = new Map();
  const keys = Object.keys(table).join(', ');
  for (const entry of entries) {
    const equals = entry.indexOf('=');
    if (equals <= 0) {
      throw new UsageError(
        `invalid value for --filter: expected key=value, got "${entry}"`,
        'INVALID_FILTER',
        `keys: ${keys}`,
      );
    }
    const key = entry.slice(0, equals).trim().toLowerCase();
    if (!Object.hasOwn(table, key)) {
      throw new UsageError(
        `invalid value for --filter: unknown key "${key}"`,
        'INVALID_FILTER',
        `keys: ${keys}`,
      );
    }
    const value = entry.slice(equals + 1);
    const allowed = table[key]?.values;
    // A value a key cannot match would silently list nothing.
    if (allowed && !allowed.includes(value.trim().toLowerCase()))
      throw new UsageError(
        `invalid value for --filter ${key}: "${value}"`,
        'INVALID_FILTER',
        `${key} takes ${allowed.join(' or ')}`,
      );
    filters.set(key, [...(filters.get(key) ?? []), value]);
  }
  return filters;
}

export function applyListFilters(records: SandboxRecord[], filters: ListFilter): SandboxRecord[] {
  return records.filter((record) =>
    [...filters].every(([key, values]) => values.some((value) => LIST_FILTERS[key]?.match(record, value))),
  );
}

export function applyImageFilters<T extends ListedImage>(images: T[], filters: ListFilter): T[] {
  return images.filter((image) =>
    [...filters].every(([key, values]) => values.some((value) => IMAGE_FILTERS[key]?.match(image, value))),
  );
}

/** What `--format` asked for. */
export type ListFormat = { kind: 'json' } | { kind: 'template'; table: boolean; parts: TemplatePart[] };

type TemplatePart = { text: string } | { field: string } | { json: true };

/**
 * `json`, `table`, `table <template>` (a header row, columns aligned) or `<template>` (one line
 * per sandbox). Templates are docker's Go-template subset that scripts use: `{{.Field}}`,
 * `{{json .}}` (the whole record), and `\t`/`\n` written as backslash escapes, as docker reads them.
 */
export function parseListFormat(format: string): ListFormat {
  const text = format.trim();
  if (text === 'json') return { kind: 'json' };
  if (text === 'table') return parseListFormat(DEFAULT_TABLE);
  const table = text.startsWith('table ');
  const body = (table ? text.slice('table '.length) : format).replace(/\\t/g, '\t').replace(/\\n/g, '\n');
  const parts: TemplatePart[] = [];
  const action = /\{\{\s*(.*?)\s*\}\}/g;
  let last = 0;
  for (let match = action.exec(body); match; match = action.exec(body)) {
    if (match.index > last) parts.push({ text: body.slice(last, match.index) });
    parts.push(templateAction(match[1] ?? ''));
    last = match.index + match[0].length;
  }
  if (last < body.length) parts.push({ text: body.slice(last) });
  return { kind: 'template', table, parts };
}

function templateAction(action: string): TemplatePart {
  if (/^json\s+\.$/.test(action)) return { json: true };
  const field = /^\.([A-Za-z]+)$/.exec(action)?.[1];
  if (field && LIST_FIELDS[field]) return { field };
  throw new UsageError(
    `invalid value for --format: unknown template action {{${action}}}`,
    'INVALID_FORMAT',
    `fields: ${Object.keys(LIST_FIELDS)
      .map((name) => `{{.${name}}}`)
      .join(' ')}, or {{json .}}`,
  );
}

/**
 * The lines of a template format. Every value is a name from a box's labels: sanitised to one
 * line, so a hostile repo name can neither break a column nor reach the terminal raw.
 */
export function renderListTemplate(
  format: Extract<ListFormat, { kind: 'template' }>,
  records: SandboxRecord[],
  now = Date.now(),
): string[] {
  const render = (cell: (part: TemplatePart) => string) => format.parts.map(cell).join('');
  const rows = records.map((record) =>
    render((part) =>
      'text' in part
        ? part.text
        : 'json' in part
          ? safeJsonStringify(record)
          : sanitizeName(LIST_FIELDS[part.field]?.value(record, now) ?? ''),
    ),
  );
  if (!format.table) return rows;
  const header = render((part) =>
    'text' in part ? part.text : 'json' in part ? 'JSON' : (LIST_FIELDS[part.field]?.header ?? ''),
  );
  return alignColumns([header, ...rows]);
}

/** Aligns tab-separated columns with two spaces between them (docker's tabwriter, padding 2 / 3). */
function alignColumns(lines: string[]): string[] {
  const cells = lines.map((line) => line.split('\t'));
  const widths: number[] = [];
  for (const row of cells) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  return cells.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}
