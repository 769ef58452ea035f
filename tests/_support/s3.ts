// An S3 API server on loopback for tests: `s3rver` (npm devDependency) as a child process on a
// free port, its data in a temporary directory. Debian packages no S3 server (no MinIO, moto,
// Garage or SeaweedFS), so this is the real-protocol stand-in. What it does NOT check, so
// tests must not claim it: SigV4 signatures (a wrong secret key is accepted; an unknown access
// key id is refused with InvalidAccessKeyId), and it has no ListMultipartUploads. It does speak
// the REST/XML protocol the SDK uses: HeadBucket, PutObject, the multipart calls, GetObject,
// DeleteObject, ListObjectsV2.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { S3Client } from '@aws-sdk/client-s3';
import { freePort, waitListening } from './net.js';

const BIN = fileURLToPath(new URL('../../../node_modules/s3rver/bin/s3rver.js', import.meta.url));

/** The one key pair s3rver knows. */
export const S3_KEY = { id: 'S3RVER', secret: 'S3RVER' };

export interface S3Server {
  endpoint: string;
  port: number;
  bucket: string;
  dir: string;
  client: S3Client;
  /** s3rver's request log lines so far. */
  log: string[];
  stop(): Promise<void>;
}

export async function startS3(bucket = 'svc-backups'): Promise<S3Server> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-s3-'));
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    [
      BIN,
      '-d',
      dir,
      '-a',
      '127.0.0.1',
      '-p',
      String(port),
      '--no-vhost-buckets',
      '--configure-bucket',
      bucket,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  // Its request log (method, path and query per response) shows which S3 calls were made.
  const log: string[] = [];
  child.stdout!.on('data', (d) =>
    log.push(
      ...String(d)
        .replace(/\x1b\[[0-9;]*m/g, '')
        .split('\n')
        .filter(Boolean),
    ),
  );
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    await waitListening(port, 30_000);
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`s3rver did not start: ${stderr}`, { cause: e });
  }
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: S3_KEY.id, secretAccessKey: S3_KEY.secret },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    endpoint,
    port,
    bucket,
    dir,
    client,
    log,
    async stop() {
      client.destroy();
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
