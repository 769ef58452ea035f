// Where a test client's requests go: over a socket (fetch) to a real server, or straight into the
// dispatcher of an in-process app (tests/_support/request.ts), which registers its base URL here.
// The clients in tests/_support/server.ts call `testFetch`, so a test written against a real
// server runs unchanged against an in-process app.

export type Transport = (url: string, init: RequestInit) => Promise<Response>;

const inProcess = new Map<string, Transport>();

export function registerTransport(base: string, transport: Transport): () => void {
  inProcess.set(base, transport);
  return () => void inProcess.delete(base);
}

/** fetch(url, init), served in-process when the URL's origin belongs to an in-process app. */
export function testFetch(url: string, init: RequestInit = {}): Promise<Response> {
  const origin = /^[a-z]+:\/\/[^/?#]+/i.exec(url)?.[0];
  const transport = origin === undefined ? undefined : inProcess.get(origin);
  return transport ? transport(url, init) : fetch(url, init);
}
