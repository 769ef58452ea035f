// The typed compose model: what the engine layer needs, already normalised (one shape per
// key whatever syntax the file used), so nothing downstream re-parses YAML forms.

export const FINDING_LEVELS = ['error', 'warning'] as const;
export type FindingLevel = (typeof FINDING_LEVELS)[number];

/** One problem found in a compose file. `key` is a dotted path such as `ports[0]` or `volumes`. */
export interface Finding {
  level: FindingLevel;
  service?: string;
  key: string;
  message: string;
}

export type DependsCondition = 'service_started' | 'service_healthy' | 'service_completed_successfully';

export interface DependsOn {
  condition: DependsCondition;
  /** `required: false` lets the dependency be absent; we still refuse undefined services. */
  required: boolean;
}

export interface BuildSpec {
  /** Relative to the working copy, normalised, never escaping it. */
  context: string;
  /** Relative to the context. */
  dockerfile: string;
  args: Record<string, string>;
  target?: string;
}

export interface PortSpec {
  hostIp?: string;
  /** Host port; undefined means "any free port". */
  published?: number;
  target: number;
  protocol: 'tcp' | 'udp' | 'sctp';
}

export type MountSpec =
  | { type: 'volume'; source: string; target: string; readOnly: boolean; noCopy: boolean }
  | { type: 'anonymous'; target: string; readOnly: boolean }
  | { type: 'bind'; source: string; target: string; readOnly: boolean; relative: boolean }
  | { type: 'tmpfs'; target: string; sizeBytes?: number };

export interface HealthcheckSpec {
  /** Docker's form: ['CMD', ...], ['CMD-SHELL', cmd] or ['NONE']. */
  test: string[];
  intervalMs?: number;
  timeoutMs?: number;
  retries?: number;
  startPeriodMs?: number;
}

export type RestartPolicy =
  { name: 'no' | 'always' | 'unless-stopped' } | { name: 'on-failure'; maxRetries: number };

export interface ServiceSpec {
  name: string;
  image?: string;
  build?: BuildSpec;
  /** Exec form: a string in the file is split like a shell would, but never run by one. */
  command?: string[];
  entrypoint?: string[];
  /** null = "take it from the app's env if present" (compose's `- KEY` form). */
  environment: Record<string, string | null>;
  envFiles: { path: string; required: boolean }[];
  ports: PortSpec[];
  /** Container ports, like `80/tcp`. */
  expose: string[];
  volumes: MountSpec[];
  dependsOn: Record<string, DependsOn>;
  healthcheck?: HealthcheckSpec;
  restart?: RestartPolicy;
  labels: Record<string, string>;
  /** Compose network key -> aliases. Empty object = the default network. */
  networks: Record<string, { aliases: string[] }>;
  /** Only `none` or `service:<name>` of this stack survive validation. */
  networkMode?: string;
  workingDir?: string;
  user?: string;
  hostname?: string;
  limits?: { nanoCpus?: number; memoryBytes?: number };
  capAdd: string[];
  capDrop: string[];
  extraHosts: string[];
  tmpfs: string[];
  stopSignal?: string;
  stopGracePeriodMs?: number;
  init?: boolean;
  tty?: boolean;
  stdinOpen?: boolean;
  readOnly?: boolean;
  shmSizeBytes?: number;
  sysctls: Record<string, string>;
  securityOpt: string[];
}

export interface VolumeSpec {
  name: string;
  labels: Record<string, string>;
}

export interface NetworkSpec {
  name: string;
  internal: boolean;
  labels: Record<string, string>;
}

export interface ComposeModel {
  /** In file order. */
  services: Record<string, ServiceSpec>;
  volumes: Record<string, VolumeSpec>;
  networks: Record<string, NetworkSpec>;
}

export interface ComposeResult {
  /** null when the file could not be read as a compose document at all. */
  model: ComposeModel | null;
  findings: Finding[];
  /** True when there is no error finding. */
  ok: boolean;
}

/** A service with every collection empty: what a compose entry with no keys means. */
export function emptyService(name: string): ServiceSpec {
  return {
    name,
    environment: {},
    envFiles: [],
    ports: [],
    expose: [],
    volumes: [],
    dependsOn: {},
    labels: {},
    networks: {},
    capAdd: [],
    capDrop: [],
    extraHosts: [],
    tmpfs: [],
    sysctls: {},
    securityOpt: [],
  };
}
