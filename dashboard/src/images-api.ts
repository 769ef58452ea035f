// The dashboard's calls for images (docs/api.md "Images and registries"): registry credentials,
// "pull and redeploy", and an app's deploy hook. Over the same typed client as api.ts.
import type { components } from '../../client/types';
import { client, run } from './api';

type S = components['schemas'];
export type Registry = S['Registry'];
export type RegistryTest = S['RegistryTest'];
export type DeployHook = S['DeployHook'];

const reg = (id: string) => ({ params: { path: { id } } });

export const listRegistries = () => run(() => client.GET('/api/registries'));
export const createRegistry = (body: { host: string; username: string; password: string }) =>
  run(() => client.POST('/api/registries', { body }));
export const deleteRegistry = (id: string) => run(() => client.DELETE('/api/registries/{id}', reg(id)));
export const testRegistry = (id: string) => run(() => client.POST('/api/registries/{id}/test', reg(id)));

/** "Pull and redeploy": every image pulled again before the deployment starts anything. */
export const pullAndDeploy = (id: string) =>
  run(() => client.POST('/api/apps/{id}/deployments', { ...reg(id), body: { pull: true } }));
export const getDeployHook = (id: string) => run(() => client.GET('/api/apps/{id}/deploy-hook', reg(id)));
export const makeDeployHook = (id: string) => run(() => client.POST('/api/apps/{id}/deploy-hook', reg(id)));
export const deleteDeployHook = (id: string) =>
  run(() => client.DELETE('/api/apps/{id}/deploy-hook', reg(id)));
