// Where encrypted backup artifacts live (the data directory or an S3 bucket), as the runs see it.
// Its own module so the destinations and the S3 store can share it without importing each other.
import type { Readable } from 'node:stream';

export interface ArtifactStore {
  put(key: string, body: Readable): Promise<void>;
  get(key: string): Promise<Readable>;
  remove(key: string): Promise<void>;
  /** The file a local store keeps `key` in: read in place, not spooled. */
  localPath?(key: string): string;
  sweepPartials?(): Promise<void>;
}
