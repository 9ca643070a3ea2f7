import { CaSandboxError } from '@ca-sandbox/docker/contracts';
/** The configuration file or a CA_SANDBOX_* variable cannot be used (usage, exit 2). */
export class ConfigError extends CaSandboxError {
  readonly kind = 'usage';
  readonly code = 'CONFIG_INVALID';
  constructor(
    message: string,
    /** The file or variable at fault. */
    readonly where: string,
    /** The setting's key (dotted, as in the file), when one is at fault. */
    readonly key?: string,
  ) {
    super(message);
  }
}
