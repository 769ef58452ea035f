import type { HandlerModule } from '../lib/http/handler.js';

export interface RouteDef {
  /** itty-router pattern: `:name` is a parameter, `:name+` a catch-all. */
  pattern: string;
  file: string;
  module: HandlerModule;
}
