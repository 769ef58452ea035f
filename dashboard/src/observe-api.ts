// The calls of the observing pages (resource history, alert rules, log drains), over the same
// typed client and error handling as every other call (./api.ts).
import { client, run } from './api';
import type { components } from '../../client/types';

type S = components['schemas'];
export type AlertRule = S['AlertRule'];
export type AlertEvent = S['AlertEvent'];
export type AlertMetric = AlertRule['metric'];
export type NewAlertRule = S['PostApiAlertsBody'];
export type AlertPatch = S['PatchApiAlertsByIdBody'];
export type LogDrain = S['LogDrain'];
export type NewLogDrain = S['PostApiLogDrainsBody'];
export type ResourcePoint = S['ResourceHistory']['items'][number];

const id = (x: string) => ({ params: { path: { id: x } } });

export const resourceHistory = (app: string, range: string, service?: string) =>
  run(() =>
    client.GET('/api/apps/{id}/metrics/resources', {
      params: { path: { id: app }, query: { range, ...(service ? { service } : {}) } },
    }),
  );

export const listAlerts = () => run(() => client.GET('/api/alerts'));
export const createAlert = (body: NewAlertRule) => run(() => client.POST('/api/alerts', { body }));
export const patchAlert = (x: string, body: AlertPatch) =>
  run(() => client.PATCH('/api/alerts/{id}', { ...id(x), body }));
export const deleteAlert = (x: string) => run(() => client.DELETE('/api/alerts/{id}', id(x)));
export const alertEvents = (cursor?: string) =>
  run(() =>
    client.GET('/api/alerts/events', { params: { query: { limit: 50, ...(cursor ? { cursor } : {}) } } }),
  );

export const listDrains = () => run(() => client.GET('/api/log-drains'));
export const createDrain = (body: NewLogDrain) => run(() => client.POST('/api/log-drains', { body }));
export const patchDrain = (x: string, body: { enabled?: boolean; name?: string }) =>
  run(() => client.PATCH('/api/log-drains/{id}', { ...id(x), body }));
export const deleteDrain = (x: string) => run(() => client.DELETE('/api/log-drains/{id}', id(x)));
export const testDrain = (x: string) => run(() => client.POST('/api/log-drains/{id}/test', id(x)));
