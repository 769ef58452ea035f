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
