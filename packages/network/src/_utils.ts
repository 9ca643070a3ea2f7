/** A user-supplied value shown in an error message: printable, short, quoted. */
export function quoteForMessage(value: string): string {
  const printable = value.replace(/[^\x20-\x7e]/g, '?');
  return `'${printable.length > 80 ? `${printable.slice(0, 80)}...` : printable}'`;
}

/**
 * Splits one `iptables -S` line into argv the way iptables quoted it: words separated by
 * spaces, double-quoted words may contain spaces and backslash escapes.
 */
export function splitRuleLine(line: string): string[] {
  const words: string[] = [];
  let current = '';
  let quoted = false;
  let inWord = false;
  for (let i = 0; i < line.length; i += 1) {
    const char = line[i] as string;
    if (quoted) {
      if (char === '\\' && i + 1 < line.length) {
        i += 1;
        current += line[i];
      } else if (char === '"') quoted = false;
      else current += char;
    } else if (char === '"') {
      quoted = true;
      inWord = true;
    } else if (char === ' ' || char === '\t') {
      if (inWord) words.push(current);
      current = '';
      inWord = false;
    } else {
      current += char;
      inWord = true;
    }
  }
  if (inWord) words.push(current);
  return words;
}

/** JSON.parse that yields undefined instead of throwing (docker output is checked by a schema next). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
