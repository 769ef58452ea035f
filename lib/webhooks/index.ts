export {
  verifyDelivery,
  detectProvider,
  signBody,
  type Provider,
  type HeadersLike,
  type Verified,
  type Rejected,
} from './verify.js';
export {
  parsePushEvent,
  MAX_PAYLOAD_BYTES,
  type PushRef,
  type PushDelivery,
  type ParsedDelivery,
} from './payload.js';
export {
  matchTriggers,
  validatePattern,
  MAX_PATTERN,
  type TriggerRule,
  type TriggerMatch,
} from './triggers.js';
export {
  parsePullRequest,
  isPullRequestEvent,
  type PullRequest,
  type ParsedPullRequest,
} from './pullrequest.js';
