// The default tab: services with live CPU and memory, the environment, deployments with the live build log.
import type { Deployment } from '../../api';
import { Services } from './services';
import { Env } from './env';
import { Deployments } from './deployments';

export function OverviewTab(props: {
  id: string;
  settled: number;
  deployments: { data: Deployment[] | null; error: unknown; reload: () => Promise<void> };
  selected: string | null;
  onSelect: (id: string) => void;
}) {
  return (
    <>
      <div class="grid">
        <Services id={props.id} version={props.settled} />
        <Env id={props.id} />
      </div>
      <Deployments id={props.id} deployments={props.deployments} selected={props.selected} onSelect={props.onSelect} />
    </>
  );
}
