// App containers and builds never reach link-local addresses (169.254.0.0/16 and fe80::/10: the
// cloud metadata service, which hands out the machine's credentials) unless SVC_ALLOW_METADATA=true.
// One nftables table of the control plane's own, `inet svc_metadata`, drops what arrives from the
// engine's bridges (app networks, and the default bridge where builds run their steps) for those
// addresses, both towards the host itself (input) and through it (forward). A drop in any table is
// final, so the rules hold whatever Docker, ufw or an operator put in theirs, and replacing the
// table is one atomic `nft -f` transaction. With SVC_ALLOW_METADATA=true the table is removed.
// ICMPv6 stays allowed towards fe80::/10: neighbour discovery on the bridges needs it.
//
// The bridges are matched by interface name: `docker0` (the default bridge, builds), `br-*` (every
// network the engine creates) and `docker_gwbridge` (a swarm node's way out). It needs root and the
// engine's network namespace; elsewhere (in a container, a cluster's other nodes) it is reported as
// not enforced, with what to do, on the posture's `link_local` row.
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';

export const METADATA_TABLE = 'svc_metadata';
const BRIDGES = ['docker0', 'br-*', 'docker_gwbridge'] as const;

export const METADATA_MODES = ['blocked', 'allowed', 'unenforced'] as const;
export interface MetadataState {
  mode: (typeof METADATA_MODES)[number];
  /** Why, in a sentence (the nft error, the missing interfaces...). */
  detail: string;
}

export type NftRunner = (args: readonly string[], input?: string) => Promise<{ code: number; out: string }>;

const runNft: NftRunner = (args, input) =>
  new Promise((resolve) => {
    const child = execFile('nft', [...args], { timeout: 10_000 }, (err, stdout, stderr) =>
      resolve({
        code: err ? (typeof err.code === 'number' ? err.code : 127) : 0,
        out: `${stdout}${stderr}`.trim(),
      }),
    );
    if (input !== undefined) child.stdin?.end(input);
  });

/** The table, as one nft script that replaces any earlier version of it atomically. */
export function metadataRuleset(): string {
  const rules = BRIDGES.flatMap((b) => [
    `    iifname "${b}" ip daddr 169.254.0.0/16 drop`,
    `    iifname "${b}" ip6 daddr fe80::/10 meta l4proto != ipv6-icmp drop`,
  ]);
  const chain = (hook: 'input' | 'forward') =>
    [`  chain ${hook} {`, `    type filter hook ${hook} priority -5; policy accept;`, ...rules, '  }'].join(
      '\n',
    );
  return [
    `table inet ${METADATA_TABLE}`,
    `delete table inet ${METADATA_TABLE}`,
    `table inet ${METADATA_TABLE} {`,
    chain('input'),
    chain('forward'),
    '}',
    '',
  ].join('\n');
}

/**
 * Whether this process sees the engine's bridges (it shares their network namespace). Read from
 * /sys/class/net: a bridge without a container has no carrier, and node's own list leaves out
 * interfaces that are not running.
 */
export function seesBridges(list: () => string[] = () => readdirSync('/sys/class/net')): boolean {
  try {
    return list().some((n) => n === 'docker0' || n.startsWith('br-'));
  } catch {
    return false;
  }
}

const HINT = `as root on the engine's host: nft -f - with the table of lib/net/metadata-guard.ts`;

/**
 * Puts the table in place (or removes it when `allow`), and says what holds now. Never throws:
 * a host where it cannot be enforced gets `unenforced` with the reason.
 */
export async function applyMetadataGuard(
  opts: { allow: boolean; cluster: boolean },
  run: NftRunner = runNft,
): Promise<MetadataState> {
  if (opts.allow) {
    const r = await run(['delete', 'table', 'inet', METADATA_TABLE]);
    const gone = r.code === 0 || /No such file|does not exist/i.test(r.out);
    return gone
      ? { mode: 'allowed', detail: 'SVC_ALLOW_METADATA=true' }
      : { mode: 'allowed', detail: `SVC_ALLOW_METADATA=true, but the earlier table stays: ${r.out}` };
  }
  if (!seesBridges())
    return {
      mode: 'unenforced',
      detail: "the control plane does not share the engine's network (no docker0 or br-* here)",
    };
  const r = await run(['-f', '-'], metadataRuleset());
  if (r.code !== 0) return { mode: 'unenforced', detail: `nft refused the table: ${r.out.slice(0, 300)}` };
  return metadataState({ allow: false, cluster: opts.cluster }, run);
}

/** What holds now, read from the host (the posture's row, from the service and from the CLI). */
export async function metadataState(
  opts: { allow: boolean; cluster: boolean },
  run: NftRunner = runNft,
): Promise<MetadataState> {
  if (opts.allow) return { mode: 'allowed', detail: 'SVC_ALLOW_METADATA=true' };
  const r = await run(['list', 'table', 'inet', METADATA_TABLE]);
  if (r.code !== 0)
    return {
      mode: 'unenforced',
      detail: `no ${METADATA_TABLE} table on this host (${r.out.slice(0, 200) || 'nft failed'})`,
    };
  if (!r.out.includes('169.254.0.0/16'))
    return { mode: 'unenforced', detail: `the ${METADATA_TABLE} table has lost its rules` };
  return {
    mode: 'blocked',
    detail: opts.cluster
      ? "blocked on this host; the swarm's other nodes need the same table"
      : 'blocked from every engine bridge (app networks and builds)',
  };
}

export const metadataFix = (s: MetadataState, cluster: boolean): string =>
  s.mode === 'allowed'
    ? 'Unset SVC_ALLOW_METADATA unless an app needs the cloud metadata service.'
    : s.mode === 'unenforced'
      ? `Run the control plane as root on the engine's host, or put the table in place ${HINT}.`
      : cluster
        ? `On each other node, ${HINT}.`
        : 'Nothing to do.';
