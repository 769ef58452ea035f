// The bench's node server with a realistic dependency tree (about 330 packages from the npm registry,
// locked at bench time by the host's npm like the test samples), so the cold `npm ci` of
// `npm run bench:build` is real work. The test suite keeps its two-package sample (fast tests).
import { sample, type Sample } from '../tests/_support/samples.js';

const SERVER = `const express = require('express');
const helmet = require('helmet');
const compression = require('compression');
const cors = require('cors');
const { z } = require('zod');
const dayjs = require('dayjs');
const _ = require('lodash');
// Loaded as an app loads its clients at start-up, so a broken install fails the check.
require('@aws-sdk/client-s3');
require('pg');
require('ioredis');
require('mongoose');
require('@sentry/node');

const Query = z.object({ name: z.string().default('bench app') });
const app = express();
app.use(helmet(), compression(), cors());
app.get('/', (req, res) => {
  const { name } = Query.parse(req.query);
  res.type('text/plain').send(\`node app: \${_.kebabCase(name)} \${dayjs('2024-02-03').format('YYYY-MM')}\\n\`);
});
app.listen(Number(process.env.PORT));
`;

export function nodeApp(): Sample {
  return {
    ...sample('node'),
    files: {
      'package.json': JSON.stringify(
        {
          name: 'svc-bench-node-app',
          version: '1.0.0',
          private: true,
          scripts: { start: 'node server.js' },
          engines: { node: '>=20' },
          dependencies: {
            '@aws-sdk/client-s3': '^3.600.0',
            '@sentry/node': '^8.33.0',
            axios: '^1.7.7',
            bcryptjs: '^2.4.3',
            bullmq: '^5.15.0',
            compression: '^1.7.4',
            'cookie-parser': '^1.4.7',
            cors: '^2.8.5',
            'date-fns': '^4.1.0',
            dayjs: '^1.11.13',
            dotenv: '^16.4.5',
            express: '^4.21.0',
            'express-rate-limit': '^7.4.1',
            helmet: '^7.1.0',
            ioredis: '^5.4.1',
            joi: '^17.13.3',
            jsonwebtoken: '^9.0.2',
            lodash: '^4.17.21',
            mongoose: '^8.7.0',
            multer: '^1.4.5-lts.1',
            nodemailer: '^6.9.15',
            pg: '^8.13.0',
            pino: '^9.4.0',
            'pino-http': '^10.3.0',
            'socket.io': '^4.8.0',
            stripe: '^17.1.0',
            uuid: '^10.0.0',
            zod: '^3.23.8',
          },
          devDependencies: { typescript: '^5.6.0' },
        },
        null,
        2,
      ),
      'server.js': SERVER,
    },
    body: 'node app: bench-app 2024-02\n',
    absentFiles: ['/app/node_modules/typescript'],
    source: 'server.js',
  };
}
