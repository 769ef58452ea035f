export class GitError extends Error {
  constructor(
    message: string,
    readonly kind: 'invalid' | 'timeout' | 'too_large' | 'failed' | 'aborted',
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'GitError';
  }
}
