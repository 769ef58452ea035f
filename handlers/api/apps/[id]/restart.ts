import { appLifecycle } from '../_lib.js';

export const POST = appLifecycle('restart');
