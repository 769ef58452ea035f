// Where a backup is stored: this host's disk, or an S3 bucket (any S3-compatible endpoint). The
// secret key is write-only: it is typed again only to change it.
import type { BackupDestination, DestinationInput } from './api';
import { Field } from './ui';

export interface DestinationDraft {
  type: 'local' | 's3';
  endpoint: string;
  region: string;
  bucket: string;
  prefix: string;
  access_key_id: string;
  secret_access_key: string;
  path_style: boolean;
}

export function draftOf(d?: BackupDestination | null): DestinationDraft {
  if (d?.type === 's3') return { ...d, type: 's3', secret_access_key: '', prefix: d.prefix ?? '' };
  return {
    type: 'local',
    endpoint: '',
    region: 'us-east-1',
    bucket: '',
    prefix: '',
    access_key_id: '',
    secret_access_key: '',
    path_style: false,
  };
}

export function destinationOf(d: DestinationDraft): DestinationInput {
  if (d.type === 'local') return { type: 'local' };
  return {
    type: 's3',
    endpoint: d.endpoint.trim(),
    region: d.region.trim(),
    bucket: d.bucket.trim(),
    prefix: d.prefix.trim(),
    access_key_id: d.access_key_id.trim(),
    path_style: d.path_style,
    ...(d.secret_access_key ? { secret_access_key: d.secret_access_key } : {}),
  };
}

export function DestinationFields(props: {
  idPrefix: string;
  value: DestinationDraft;
  onChange: (d: DestinationDraft) => void;
  /** An S3 destination already has a secret key stored. */
  secretSet?: boolean;
  error: (field: string) => string | undefined;
}) {
  const d = props.value;
  const set = (patch: Partial<DestinationDraft>) => props.onChange({ ...d, ...patch });
  const id = (k: string) => `${props.idPrefix}-${k}`;
  return (
    <fieldset class="stack">
      <legend>Stored on</legend>
      <div class="row wrap">
        <label class="inline">
          <input
            type="radio"
            name={id('type')}
            checked={d.type === 'local'}
            onChange={() => set({ type: 'local' })}
          />{' '}
          This host's disk
        </label>
        <label class="inline">
          <input
            type="radio"
            name={id('type')}
            checked={d.type === 's3'}
            onChange={() => set({ type: 's3' })}
          />{' '}
          An S3 bucket
        </label>
      </div>
      {d.type === 's3' && (
        <div class="fields">
          <Field
            id={id('endpoint')}
            label="Endpoint"
            value={d.endpoint}
            onInput={(v) => set({ endpoint: v })}
            placeholder="https://s3.eu-central-1.amazonaws.com"
            error={props.error('destination.endpoint')}
          />
          <Field
            id={id('region')}
            label="Region"
            value={d.region}
            onInput={(v) => set({ region: v })}
            error={props.error('destination.region')}
          />
          <Field
            id={id('bucket')}
            label="Bucket"
            value={d.bucket}
            onInput={(v) => set({ bucket: v })}
            error={props.error('destination.bucket')}
          />
          <Field
            id={id('prefix')}
            label="Folder in the bucket"
            value={d.prefix}
            onInput={(v) => set({ prefix: v })}
            placeholder="backups/"
            error={props.error('destination.prefix')}
          />
          <Field
            id={id('key-id')}
            label="Access key ID"
            value={d.access_key_id}
            onInput={(v) => set({ access_key_id: v })}
            autoComplete="off"
            error={props.error('destination.access_key_id')}
          />
          <Field
            id={id('secret')}
            label="Secret access key"
            type="password"
            autoComplete="new-password"
            value={d.secret_access_key}
            onInput={(v) => set({ secret_access_key: v })}
            hint={props.secretSet ? 'Stored; type it only to change it.' : undefined}
            error={props.error('destination.secret_access_key')}
          />
          <label class="inline">
            <input
              type="checkbox"
              checked={d.path_style}
              onChange={(e) => set({ path_style: (e.target as HTMLInputElement).checked })}
            />{' '}
            Path-style addresses (MinIO and most self-hosted stores)
          </label>
        </div>
      )}
    </fieldset>
  );
}
