import { pino, type Logger } from 'pino';

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module './http/handler.js' {
  interface Services {
    log: Logger;
  }
}

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: undefined,
    // Belt and braces: these keys never reach a log line even if someone logs a whole object.
    redact: {
      paths: [
        'password',
        '*.password',
        'token',
        '*.token',
        'secret',
        '*.secret',
        'value',
        '*.value',
        'headers.authorization',
        'headers.cookie',
      ],
      censor: '[redacted]',
    },
  });
}
