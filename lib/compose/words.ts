// Splits a command string into words like a POSIX shell would tokenise it (quotes and
// backslashes), without expanding or running anything: compose's string form of
// `command`/`entrypoint` becomes an exec-form argument list.

export function splitWords(input: string): string[] | null {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    if (c === "'") {
      const end = input.indexOf("'", i + 1);
      if (end < 0) return null;
      cur += input.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      let closed = false;
      while (i < input.length) {
        const d = input[i];
        if (d === '"') {
          closed = true;
          i++;
          break;
        }
        if (d === '\\' && i + 1 < input.length && '"\\$`\n'.includes(input[i + 1])) {
          cur += input[i + 1];
          i += 2;
          continue;
        }
        cur += d;
        i++;
      }
      if (!closed) return null;
      inWord = true;
    } else if (c === '\\' && i + 1 < input.length) {
      cur += input[i + 1];
      inWord = true;
      i += 2;
    } else if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
      i++;
    } else {
      cur += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(cur);
  return words;
}
