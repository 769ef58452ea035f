// A domain's own certificate (instead of ACME): PEM files chosen or pasted, sent after a step-up;
// removing it returns the domain to ACME.
import { useState } from 'preact/hooks';
import * as api from '../../api';
import type { Domain } from '../../api';
import { formErrors } from '../../form-errors';
import { FormNote, useAction } from '../../ui';

async function fileText(e: Event): Promise<string | null> {
  const f = (e.target as HTMLInputElement).files?.[0];
  return f ? f.text() : null;
}

export function CertificateUpload({ domain, onChanged }: { domain: Domain; onChanged: () => void }) {
  const [open, setOpen] = useState(false);
  const [cert, setCert] = useState('');
  const [key, setKey] = useState('');
  const act = useAction();
  const errors = formErrors(act.error, { cert_pem: 'Certificate', key_pem: 'Private key' });
  const uploaded = domain.certificate?.source === 'uploaded';
  if (!open)
    return (
      <>
        <button type="button" onClick={() => setOpen(true)}>
          {uploaded ? 'Replace certificate' : 'Upload certificate'}
          <span class="sr-only"> of {domain.hostname}</span>
        </button>
        {uploaded && (
          <button
            type="button"
            disabled={act.busy}
            onClick={() =>
              confirm(`Remove the uploaded certificate of ${domain.hostname}? ACME issues one again.`) &&
              void act.run(async () => {
                await api.removeCertificate(domain.id);
                onChanged();
              })
            }
          >
            Use ACME again<span class="sr-only"> for {domain.hostname}</span>
          </button>
        )}
      </>
    );
  return (
    <form
      class="stack cert-form"
      aria-label={`Certificate of ${domain.hostname}`}
      onSubmit={(e) => {
        e.preventDefault();
        void act.run(async () => {
          await api.uploadCertificate(domain.id, cert, key);
          setOpen(false);
          onChanged();
        });
      }}
    >
      <label>
        Certificate (PEM, with its chain)
        <input
          type="file"
          accept=".pem,.crt,.cer"
          onChange={async (e) => setCert((await fileText(e)) ?? cert)}
        />
      </label>
      {errors.field('cert_pem') && <span class="error small">{errors.field('cert_pem')}</span>}
      <label>
        Private key (PEM)
        <input type="file" accept=".pem,.key" onChange={async (e) => setKey((await fileText(e)) ?? key)} />
      </label>
      {errors.field('key_pem') && <span class="error small">{errors.field('key_pem')}</span>}
      <FormNote errors={errors} />
      <div class="row">
        <button type="submit" class="primary" disabled={act.busy || !cert || !key}>
          Upload
        </button>
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}
