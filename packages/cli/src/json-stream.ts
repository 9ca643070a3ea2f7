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
  const flush = async () => {
    if (size === 0) return;
    const text = buffered.join('');
    buffered = [];
    size = 0;
    if (!stream.write(text)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
  };
  const put = async (text: string) => {
    buffered.push(text);
    size += text.length;
    if (size >= 64 * 1024) await flush();
  };
  const walk = async (item: unknown, indent: string): Promise<void> => {
    if (Array.isArray(item)) {
      if (item.length === 0) return put('[]');
      const inner = `${indent}  `;
      await put('[\n');
      for (let i = 0; i < item.length; i += 1) {
        await put(inner);
        const element = item[i];
        // As JSON.stringify: what has no JSON form is null in an array.
        await walk(isSkipped(element) ? null : element, inner);
        await put(i < item.length - 1 ? ',\n' : '\n');
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
      const inner = `${indent}  `;
      await put('{\n');
      for (let i = 0; i < entries.length; i += 1) {
        const [key, field] = entries[i] as [string, unknown];
        await put(`${inner}${safeJsonStringify(key)}: `);
        await walk(field, inner);
        await put(i < entries.length - 1 ? ',\n' : '\n');
      }
      return put(`${indent}}`);
    }
    // A leaf (or an object with toJSON): its own JSON, re-indented where it spans lines.
    return put(safeJsonStringify(item, 2).replace(/\n/g, `\n${indent}`));
  };
  await walk(value, '');
  await put('\n');
  await flush();
}

function isSkipped(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}
