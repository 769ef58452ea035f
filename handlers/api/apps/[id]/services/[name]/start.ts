import { serviceLifecycle } from '../../../_lib.js';

export const POST = serviceLifecycle('start');
