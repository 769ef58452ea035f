export class GitError extends Error {
  /** git's exit status when it ran and failed (some commands answer a question with it). */
  readonly exitCode?: number;

  constructor(
    message: string,
    readonly kind: 'invalid' | 'timeout' | 'too_large' | 'failed' | 'aborted',
    options?: { cause?: unknown; exitCode?: number },
  ) {
    super(message, options);
    this.name = 'GitError';
    this.exitCode = options?.exitCode;
  }
}
