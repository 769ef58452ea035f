import type { HandlerModule } from '#lib/http/route.js';

export interface RouteDef {
  /** itty-router pattern: `:name` is a parameter, `:name+` a catch-all. */
  pattern: string;
  file: string;
  /** The handler module itself, or a loader for it (the generated table loads on first use). */
  module?: HandlerModule;
  load?: () => Promise<HandlerModule>;
}

/** The route's module, loaded once. */
export async function routeModule(route: RouteDef): Promise<HandlerModule> {
  if (route.module) return route.module;
  if (!route.load) throw new Error(`route ${route.pattern} has neither a module nor a loader`);
  const mod = await route.load();
  (route as { module?: HandlerModule }).module = mod;
  return mod;
}
