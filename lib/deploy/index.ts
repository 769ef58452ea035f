export { DeployService, StopReason, type DeployServiceOptions, type EnqueueInput, type EnqueueResult } from './service.js';
export { ACTIVE, TERMINAL, isTerminal, toDeployment, mainImage, type Deployment, type DeployStatus, type Trigger, type DeploySpec } from './model.js';
export { getDeployment, listDeployments, listActive, readLogs, readConcurrency, MIN_CONCURRENCY, MAX_CONCURRENCY } from './store.js';
export { DeployLog, masker, MAX_LOG_LINES, MAX_LOG_BYTES, MASK } from './log.js';
export { registerStreams } from './streams.js';
export { defaultProbeMode, type ProbeMode } from './health.js';
