export * from './types.js';
export {
  parseCompose,
  MAX_COMPOSE_BYTES,
  MAX_ALIAS_COUNT,
  MAX_SERVICES,
  SERVICE_NAME,
  type ParseOptions,
} from './parse.js';
export { interpolateString, type InterpolationIssue } from './interpolate.js';
export { parseDotenv, type DotenvEntry } from './dotenv.js';
export { splitWords } from './words.js';
export { startOrder } from './graph.js';
export { isImageRef } from './service.js';
export { ALLOWED_CAPS, DEFAULT_SOCKET_PATHS, truthy, falsy } from './policy.js';
export { singleServiceModel, SINGLE_SERVICE } from './single.js';
