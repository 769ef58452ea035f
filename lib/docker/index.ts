export {
  createEngine,
  pingEngine,
  guard,
  mapEngineError,
  isConnectError,
  isNotFound,
  EngineUnavailableError,
  EngineConflictError,
  StackError,
  type Engine,
} from './engine.js';
export {
  ensureImage,
  hasImage,
  pullImage,
  PullError,
  PULL_POLICIES,
  type PullPolicy,
  type PullOptions,
  type RegistryCredentials,
  type RegistryLogin,
} from './pull.js';
export * from './names.js';
export {
  LABEL_INSTANCE,
  ownerLabels,
  ownedFilter,
  isOwned,
  freshOwner,
  adoptedKey,
  type Owner,
  type ObjectKind,
} from './owner.js';
export {
  planStack,
  insideWorkdir,
  type StackPlan,
  type PlanService,
  type PlanNetwork,
  type PlanVolume,
  type PlanOptions,
  type PlanResult,
} from './plan.js';
export { ensureNetworks, ensureVolumes, listAppNetworks, listAppVolumes } from './resources.js';
export {
  listAppContainers,
  assertOwnedContainer,
  createServiceContainer,
  createChecked,
  networkModeFor,
  startContainer,
  stopContainer,
  removeContainer,
  removeOwnedContainer,
  removeDeploymentContainers,
  setAliases,
  waitForCondition,
  serviceImage,
  planService,
  healthFromStatus,
  type AppContainer,
  type CreateOptions,
  type WaitOptions,
} from './containers.js';
export {
  stackUp,
  stackStop,
  stackStart,
  stackRestart,
  stackRemove,
  type UpOptions,
  type UpResult,
  type RemoveResult,
} from './stack.js';
export { listServices, listAllServices, type ServiceState, type PublishedPort } from './services.js';
export { followEvents, toContainerEvent, type ContainerEvent, type FollowOptions } from './events.js';
export { ensureControlNetwork } from './control.js';
export {
  templateFromPlan,
  templateFromContainer,
  createOneOff,
  runContainerState,
  listRunContainers,
  stopRunContainer,
  removeRunContainer,
  followRunOutput,
  HOST_FIELDS,
  type OneOffTemplate,
  type RunContainerState,
  type OutputLine,
} from './oneoff.js';
export { buildImage, buildLabels, packTree, type BuildOptions } from './build.js';
export { assertBuildAllowed, type BuildFile } from './dockerfile.js';
export {
  relativeKey,
  showBind,
  bindKey,
  lookupBind,
  hostPathProblem,
  checkBindsBeforeCreate,
  verifyCreatedMounts,
  seedVolume,
  LABEL_BIND,
  EMPTY_IMAGE,
  type BindSource,
  type BindTable,
} from './binds.js';
