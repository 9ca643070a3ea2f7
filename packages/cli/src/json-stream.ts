import { safeJsonStringify } from '@ca-sandbox/docker/contracts';

/**
 * Writes `value` as JSON.stringify(value, undefined, 2) would (with safeJsonStringify's escapes),
 * piece by piece, waiting for the stream when it is full: a report of 100,000 changed files is
 * never one 20 MB string (and its escaped copy) in memory. Arrays and objects are walked; every
 * other value is one safeJsonStringify call.
 */
export async function writeJson(stream: NodeJS.WritableStream, value: unknown): Promise<void> {
  let buffered: string[] = [];
  let size = 0;
  const put = (text: string) => {
    buffered.push(text);
    size += text.length;
  };
  // Awaited only between array elements, and only once 64 KiB are waiting: a promise per piece
  // would make more garbage than the pieces.
  const drain = async () => {
    if (size < 64 * 1024) return;
    const text = buffered.join('');
    buffered = [];
    size = 0;
    if (!stream.write(text)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
  };
  const walk = async (item: unknown, indent: string): Promise<void> => {
    if (Array.isArray(item)) {
      if (item.length === 0) return put('[]');
      const inner = `${indent}  `;
      put('[\n');
      for (let i = 0; i < item.length; i += 1) {
        put(inner);
        const element = item[i];
        // As JSON.stringify: what has no JSON form is null in an array.
        await walk(isSkipped(element) ? null : element, inner);
        put(i < item.length - 1 ? ',\n' : '\n');
        await drain();
      }
      return put(`${indent}]`);
    }
    if (
      item !== null &&
      typeof item === 'object' &&
      typeof (item as { toJSON?: unknown }).toJSON !== 'function'
    ) {
      const entries = Object.entries(item).filter(([, field]) => !isSkipped(field));
      if (entries.length === 0) return put('{}');
      // A flat object (a changed file, a command; lists of plain values in it too): one
      // stringify, re-indented. Walking it would make a promise per field of 100,000 rows.
      if (entries.every(([, field]) => isPlain(field) || (Array.isArray(field) && field.every(isPlain))))
        return put(safeJsonStringify(item, 2).replace(/\n/g, `\n${indent}`));
      const inner = `${indent}  `;
      put('{\n');
      for (let i = 0; i < entries.length; i += 1) {
        const [key, field] = entries[i] as [string, unknown];
        put(`${inner}${safeJsonStringify(key)}: `);
        await walk(field, inner);
        put(i < entries.length - 1 ? ',\n' : '\n');
      }
      return put(`${indent}}`);
    }
    // A leaf (or an object with toJSON): its own JSON, re-indented where it spans lines.
    return put(safeJsonStringify(item, 2).replace(/\n/g, `\n${indent}`));
  };
  await walk(value, '');
  put('\n');
  const text = buffered.join('');
  if (text && !stream.write(text))
    await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
}

function isPlain(value: unknown): boolean {
  return value === null || typeof value !== 'object';
}

function isSkipped(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}
