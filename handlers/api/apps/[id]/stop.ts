import { lifecycleRoute } from '../_shared.js';

export const { POST, schema } = lifecycleRoute('stop', false);
