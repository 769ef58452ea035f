// Polling for tests: wait until a condition holds, with a generous deadline (CI machines are
// slow) and never a timed assertion. The last error thrown by the check is kept for the message.
export async function poll<T>(
  what: string,
  check: () => T | Promise<T>,
  timeoutMs: number,
  everyMs: number,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * `promise` (undefined: nothing to wait for), or an error once `timeoutMs` passed: for teardown
 * steps, which must end even when what they stop no longer answers.
 */
export async function bounded<T>(
  what: string,
  promise: Promise<T> | undefined,
  timeoutMs: number,
): Promise<T | undefined> {
  if (!promise) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
