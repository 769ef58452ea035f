export { checkRepoUrl, checkRef, type Verdict } from './validate.js';
export { shallowClone, withTempClone, runGit, treeSize, gitEnv, GitError, SAFE_CONFIG, type CloneOptions, type CloneResult } from './clone.js';
export { detectCompose, envExample, COMPOSE_FILES, ENV_EXAMPLE_FILES, type Detection } from './detect.js';
export { withDeployKey, testConnection, sshCommand, cleanMessage, explainFailure, sshHost, type DeployKeyPaths, type ConnectionResult } from './ssh.js';
