export {
  checkRepoUrl,
  checkRef,
  checkCommit,
  COMMIT_HASH,
  redactUrl,
  redactUrls,
  type Verdict,
} from './validate.js';
export {
  shallowClone,
  withTempClone,
  runGit,
  treeSize,
  gitEnv,
  privateHome,
  GitError,
  SAFE_CONFIG,
  type CloneOptions,
  type CloneResult,
} from './clone.js';
export {
  detectCompose,
  readComposeFile,
  envExample,
  COMPOSE_FILES,
  ENV_EXAMPLE_FILES,
  type Detection,
} from './detect.js';
export {
  withDeployKey,
  testConnection,
  sshCommand,
  anonymousSshCommand,
  cleanMessage,
  explainFailure,
  sshHost,
  type DeployKeyPaths,
  type ConnectionResult,
} from './ssh.js';
