// Values that are here now or arrive later. The request path stays synchronous while every step
// is (a loaded handler module, a cached credential, a prepared statement, a synchronous handler):
// measured, a promise per step costs more than most of the steps themselves.
export type Maybe<T> = T | Promise<T>;

export function isPromise<T>(v: Maybe<T>): v is Promise<T> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

/** `next(value)`, now if the value is here, else when it arrives. */
export function then<T, U>(v: Maybe<T>, next: (value: T) => Maybe<U>): Maybe<U> {
  return isPromise(v) ? v.then(next) : next(v);
}

/** Runs `fn`; a synchronous throw or a rejection becomes `onError`'s result. */
export function attempt<T>(fn: () => Maybe<T>, onError: (e: unknown) => Maybe<T>): Maybe<T> {
  let v: Maybe<T>;
  try {
    v = fn();
  } catch (e) {
    return onError(e);
  }
  return isPromise(v) ? v.then(undefined, onError) : v;
}
