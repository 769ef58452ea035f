import { appLifecycle } from '../_shared.js';

export const POST = appLifecycle('restart');
