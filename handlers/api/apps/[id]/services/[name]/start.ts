import { serviceLifecycle } from '../../../_shared.js';

export const POST = serviceLifecycle('start');
