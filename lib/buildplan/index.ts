// Build plans: a repository's files in, a Dockerfile and what it will do out. Pure over RepoFiles.
export { detect, LOOKED_FOR } from './detect.js';
export { diskFiles, memoryFiles, type MemoryTree, type RepoFiles, type DirEntry } from './files.js';
export {
  isPlan,
  PlanError,
  STACKS,
  type NotDetectable,
  type Plan,
  type Stack,
  type StackOverride,
} from './types.js';
export { mapDockerfileImages } from './images.js';
