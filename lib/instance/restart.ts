// How the control plane comes back after POST /api/instance/restart. Under a process manager
// (systemd sets INVOCATION_ID, pm2 sets pm_id; SVC_RESTART_MODE=exit forces it) it exits and the
// manager starts it again: the exit code is non-zero so `Restart=on-failure` policies apply too.
// Standalone it re-executes itself. Either way in-flight requests finish first, WebSocket
// clients are closed, and running deployments are left to the boot recovery.

export const RESTART_EXIT_CODE = 75;

export type RestartMode = 'exit' | 'reexec';

export function restartMode(env: NodeJS.ProcessEnv): RestartMode {
  const forced = env.SVC_RESTART_MODE;
  if (forced === 'exit' || forced === 'reexec') return forced;
  return env.INVOCATION_ID || env.pm_id !== undefined ? 'exit' : 'reexec';
}
