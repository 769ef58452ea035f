// The S3 destination: the AWS SDK v3 client with lib-storage's multipart Upload, so an artifact
// streams out in parts of PART_SIZE (at most QUEUE parts in memory) and streams back on read.
//
// The endpoint is an address an operator typed, so it passes a guard like the notification
// URLs' (lib/net/outbound.ts), with one deliberate difference. Notifications refuse private and
// loopback addresses unless SVC_NOTIFY_ALLOW exempts them; an S3 endpoint on the LAN or on
// loopback is the ordinary self-hosted case (MinIO, Garage, SeaweedFS next to the control
// plane), like the contract's git sources ("private and loopback hosts are allowed"). So:
//   - loopback, RFC 1918, ULA and CGNAT addresses are allowed, over http or https;
//   - a public address must use https (the issue: "http:// to a public host" is refused);
//   - link-local (169.254.169.254, the cloud metadata service), multicast, unspecified,
//     broadcast and reserved addresses are always refused: no S3 server lives there;
//   - the name is resolved once per client and the connection goes to exactly that address
//     (a pinned lookup), so a rebinding resolver cannot move a checked endpoint elsewhere;
//   - redirects are never followed (the SDK does not follow them).
// The check runs at save time and again each time a run, download, restore or verify opens
// the destination.
import { lookup as dnsLookup } from 'node:dns/promises';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import ipaddr from 'ipaddr.js';
import type * as S3Sdk from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import type * as S3Storage from '@aws-sdk/lib-storage';
import { refusalOf } from '../net/outbound.js';
import { lazyRequire } from '../util/lazy.js';
import type { ArtifactStore } from './artifact.js';

// The SDK is about 20 MB resident once loaded: an idle server, and most never use S3, does not pay for it.
const sdk = lazyRequire<typeof S3Sdk>('@aws-sdk/client-s3');
const storage = lazyRequire<typeof S3Storage>('@aws-sdk/lib-storage');

/** S3's minimum part size: with QUEUE parts in flight a run holds about 10 MiB of artifact. */
export const PART_SIZE = 5 * 1024 * 1024;
const QUEUE = 2;
const CONNECT_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 60_000;

export interface S3Settings {
  endpoint: string;
  region: string;
  bucket: string;
  prefix: string;
  access_key_id: string;
  secret_access_key: string;
  path_style: boolean;
}

/** An endpoint the guard refuses; `field` is the config field to name in a 400. */
export class S3Refused extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const PRIVATE_RANGES = new Set(['loopback', 'private', 'uniqueLocal', 'carrierGradeNat']);

/** 'public', 'private' (self-hosted ranges), or the reason the address is refused. */
export function classify(address: string): { kind: 'public' | 'private' } | { kind: 'refused'; why: string } {
  const why = refusalOf(address);
  if (!why) return { kind: 'public' };
  let a: ipaddr.IPv4 | ipaddr.IPv6 = ipaddr.parse(address);
  if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()) a = (a as ipaddr.IPv6).toIPv4Address();
  if (PRIVATE_RANGES.has(a.range())) return { kind: 'private' };
  return { kind: 'refused', why };
}

interface Target {
  url: URL;
  address: { address: string; family: 4 | 6 };
}

export type S3Resolver = (host: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;
const systemResolve: S3Resolver = async (host) =>
  (await dnsLookup(host, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** Resolves the host the client will contact, once, and applies the policy above. */
export async function checkEndpoint(
  endpoint: string,
  bucket: string,
  pathStyle: boolean,
  resolve: S3Resolver = systemResolve,
): Promise<Target> {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new S3Refused('destination.endpoint', 'destination.endpoint is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new S3Refused('destination.endpoint', 'destination.endpoint must be https://');
  const bare = url.hostname.replace(/^\[|\]$/g, '');
  // Virtual-hosted style puts the bucket in the name, which may resolve elsewhere.
  const host = pathStyle || isIP(bare) ? bare : `${bucket}.${bare}`;
  let addresses: Array<{ address: string; family: 4 | 6 }>;
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await resolve(host);
    } catch (e) {
      throw new S3Refused(
        'destination.endpoint',
        `${host} does not resolve (${(e as { code?: string }).code ?? 'lookup failed'})`,
      );
    }
    if (!addresses.length) throw new S3Refused('destination.endpoint', `${host} does not resolve`);
  }
  for (const a of addresses) {
    const c = classify(a.address);
    if (c.kind === 'refused')
      throw new S3Refused(
        'destination.endpoint',
        `destination.endpoint is refused: ${host === a.address ? '' : `${host} resolves to `}${c.why}`,
      );
    // Plain HTTP would carry the artifacts and the signed requests in clear across the internet.
    if (c.kind === 'public' && url.protocol === 'http:')
      throw new S3Refused(
        'destination.endpoint',
        'destination.endpoint may use http:// only for a loopback or private address; use https://',
      );
  }
  return { url, address: addresses[0]! };
}

export function makeClient(s: S3Settings, target: Target): S3Client {
  const pinned: LookupFunction = (_host, options, cb) => {
    if ((options as { all?: boolean }).all)
      (cb as unknown as (e: null, a: Target['address'][]) => void)(null, [target.address]);
    else cb(null, target.address.address, target.address.family);
  };
  return new (sdk().S3Client)({
    endpoint: s.endpoint,
    region: s.region,
    forcePathStyle: s.path_style,
    credentials: { accessKeyId: s.access_key_id, secretAccessKey: s.secret_access_key },
    // Checksums only where S3 requires them: the default streams bodies with aws-chunked
    // trailers, which many S3-compatible servers store verbatim. Integrity is ours anyway
    // (sha256 of the stored bytes, GCM tags on every record).
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 3,
    requestHandler: {
      httpAgent: new HttpAgent({ keepAlive: false, lookup: pinned }),
      httpsAgent: new HttpsAgent({ keepAlive: false, lookup: pinned }),
      connectionTimeout: CONNECT_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
    },
  });
}

/** A provider's answer as a sentence without the secret (the SDK never puts it in one). */
export function s3Reason(op: string, e: unknown, secret?: string): string {
  let msg: string;
  if (e instanceof sdk().S3ServiceException) {
    const status = e.$metadata?.httpStatusCode;
    const text =
      e.message && e.message !== 'UnknownError'
        ? e.message
        : status === 404
          ? 'not found'
          : status === 403
            ? 'access denied'
            : 'error';
    msg = `S3 ${op} failed: ${e.name}${status ? ` (HTTP ${status})` : ''}: ${text}`;
  } else {
    const err = e as Error & { code?: string };
    msg = `S3 ${op} failed: ${err.code ? `${err.code}: ` : ''}${err.message ?? String(e)}`;
  }
  if (secret) msg = msg.split(secret).join('***');
  return msg.replace(/\s+/g, ' ').slice(0, 400);
}

export function objectKey(prefix: string, key: string): string {
  const p = prefix.replace(/^\/+/, '');
  return p ? `${p.replace(/\/+$/, '')}/${key}` : key;
}

/**
 * Save-time probe: the bucket answers to these credentials. A missing bucket, refused
 * credentials and an unreachable endpoint are 400s naming the field.
 */
export async function probe(s: S3Settings, resolve?: S3Resolver): Promise<void> {
  const target = await checkEndpoint(s.endpoint, s.bucket, s.path_style, resolve);
  const client = makeClient(s, target);
  try {
    await client.send(new (sdk().HeadBucketCommand)({ Bucket: s.bucket }), {
      abortSignal: AbortSignal.timeout(15_000),
    });
  } catch (e) {
    const status = e instanceof sdk().S3ServiceException ? e.$metadata?.httpStatusCode : undefined;
    if (status === 404)
      throw new S3Refused('destination.bucket', `the bucket "${s.bucket}" does not exist at this endpoint`);
    if (status === 403 || status === 401)
      throw new S3Refused(
        'destination.access_key_id',
        `${s3Reason('HeadBucket', e, s.secret_access_key)}: the credentials were refused`,
      );
    throw new S3Refused('destination.endpoint', s3Reason('HeadBucket', e, s.secret_access_key));
  } finally {
    client.destroy();
  }
}

export function s3Store(settings: () => Promise<S3Settings>, resolve?: S3Resolver): ArtifactStore {
  let opened: Promise<{ client: S3Client; s: S3Settings }> | null = null;
  const open = () =>
    (opened ??= (async () => {
      const s = await settings();
      const target = await checkEndpoint(s.endpoint, s.bucket, s.path_style, resolve).catch((e) => {
        throw new Error(e instanceof S3Refused ? e.message : String(e));
      });
      return { client: makeClient(s, target), s };
    })());
  return {
    async put(key, body) {
      const { client, s } = await open();
      const upload = new (storage().Upload)({
        client,
        params: {
          Bucket: s.bucket,
          Key: objectKey(s.prefix, key),
          Body: body,
          ContentType: 'application/octet-stream',
        },
        partSize: PART_SIZE,
        queueSize: QUEUE,
        // A failed upload aborts its multipart upload, so no parts are left billed and hidden.
        leavePartsOnError: false,
      });
      try {
        await upload.done();
      } catch (e) {
        body.destroy();
        throw new Error(s3Reason('upload', e, s.secret_access_key));
      }
    },
    async get(key) {
      const { client, s } = await open();
      try {
        const r = await client.send(
          new (sdk().GetObjectCommand)({ Bucket: s.bucket, Key: objectKey(s.prefix, key) }),
        );
        return r.Body as Readable;
      } catch (e) {
        throw new Error(s3Reason('download', e, s.secret_access_key));
      }
    },
    async remove(key) {
      const { client, s } = await open();
      const k = objectKey(s.prefix, key);
      // A process that died mid-upload leaves an open multipart upload; abort it (best effort:
      // not every S3-compatible server lists them).
      try {
        const l = await client.send(new (sdk().ListMultipartUploadsCommand)({ Bucket: s.bucket, Prefix: k }));
        for (const u of l.Uploads ?? [])
          if (u.Key === k && u.UploadId)
            await client.send(
              new (sdk().AbortMultipartUploadCommand)({ Bucket: s.bucket, Key: k, UploadId: u.UploadId }),
            );
      } catch {
        /* not supported, or nothing to abort */
      }
      try {
        await client.send(new (sdk().DeleteObjectCommand)({ Bucket: s.bucket, Key: k }));
      } catch (e) {
        throw new Error(s3Reason('delete', e, s.secret_access_key));
      }
    },
  };
}
