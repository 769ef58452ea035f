// The new-app form (overview and apps list): a name and a source (a repository and branch, or an
// image). The API's refusals are shown once, next to the field they are about, in these words.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { App } from '../api';
import { formErrors } from '../form-errors';
import { Field, FormNote, useAction } from '../ui';

const LABELS = {
  name: 'Name',
  'source.repo_url': 'Repository URL',
  'source.branch': 'Branch',
  'source.image': 'Image',
} as const;

export function NewApp({ onCreated }: { onCreated: (a: App) => void }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState<'git' | 'image'>('git');
  const [repo, setRepo] = useState('');
  const [branch, setBranch] = useState('main');
  const [image, setImage] = useState('');
  const act = useAction();
  const errors = formErrors(act.error, LABELS, { conflict: 'name' });
  return (
    <section class="card" aria-labelledby="new-h">
      <h2 id="new-h">New app</h2>
      <form
        class="stack"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            const source: api.AppSource =
              kind === 'git'
                ? { type: 'git', repo_url: repo.trim(), branch: branch.trim() }
                : { type: 'image', image: image.trim() };
            onCreated((await api.createApp(name.trim(), source)).app);
          });
        }}
      >
        <Field
          id="name"
          label="Name"
          value={name}
          onInput={setName}
          error={errors.field('name')}
          hint="Lower-case letters, digits and dashes; it becomes the app's host name."
        />
        <fieldset class="row wrap">
          <legend>Source</legend>
          <label class="inline">
            <input type="radio" name="kind" checked={kind === 'git'} onChange={() => setKind('git')} /> Git
            repository
          </label>
          <label class="inline">
            <input type="radio" name="kind" checked={kind === 'image'} onChange={() => setKind('image')} />{' '}
            Image
          </label>
        </fieldset>
        <SourceFields
          kind={kind}
          repo={repo}
          branch={branch}
          image={image}
          onRepo={setRepo}
          onBranch={setBranch}
          onImage={setImage}
          error={errors.field}
        />
        <FormNote errors={errors} />
        <div class="row">
          <button type="submit" class="primary" disabled={act.busy}>
            Create app
          </button>
        </div>
      </form>
    </section>
  );
}

function SourceFields(p: {
  kind: 'git' | 'image';
  repo: string;
  branch: string;
  image: string;
  onRepo: (v: string) => void;
  onBranch: (v: string) => void;
  onImage: (v: string) => void;
  error: (path: string) => string | undefined;
}) {
  if (p.kind === 'git')
    return (
      <>
        <Field
          id="repo_url"
          label="Repository URL"
          value={p.repo}
          onInput={p.onRepo}
          placeholder="https://git.example.com/me/app.git"
          error={p.error('source.repo_url')}
        />
        <Field
          id="branch"
          label="Branch"
          value={p.branch}
          onInput={p.onBranch}
          error={p.error('source.branch')}
        />
      </>
    );
  return (
    <Field
      id="image"
      label="Image"
      value={p.image}
      onInput={p.onImage}
      placeholder="nginx:1.27"
      mono
      error={p.error('source.image')}
      hint="A reference the Docker engine can pull or already has, with its tag."
    />
  );
}
