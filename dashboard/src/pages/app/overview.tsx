// The default tab: services with live CPU and memory, the environment, deployments with the live
// build log; before a git app's first deploy, the plan of what it will build.
import type { App, Deployment } from '../../api';
import type { AppUrl } from '../../proxy';
import { Services } from './services';
import { Env } from './env';
import { Deployments } from './deployments';
import { FirstDeploy } from './plan';
import { SleepSetting } from './sleep';
import { ReleaseSetting } from './release';

export function OverviewTab(props: {
  app: App;
  onSaved: (a: App) => void;
  onDeploy: () => Promise<unknown>;
  urls: AppUrl[];
  /** Something that changes where the app answers was saved (a port). */
  onChanged: () => Promise<unknown>;
  settled: number;
  deployments: { data: Deployment[] | null; error: unknown; reload: () => Promise<void> };
  selected: string | null;
  onSelect: (id: string) => void;
}) {
  const id = props.app.id;
  const first = props.app.source.type === 'git' && props.deployments.data?.length === 0;
  return (
    <>
      {first && <FirstDeploy app={props.app} onSaved={props.onSaved} onDeploy={props.onDeploy} />}
      <Services id={id} version={props.settled} onChanged={props.onChanged} />
      <Env id={id} />
      <Deployments
        id={id}
        urls={props.urls}
        deployments={props.deployments}
        selected={props.selected}
        onSelect={props.onSelect}
      />
      <SleepSetting app={props.app} onSaved={props.onSaved} />
      <ReleaseSetting app={props.app} onSaved={props.onSaved} />
    </>
  );
}
