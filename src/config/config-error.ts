/** A bad setting; its message is the one line printed before exit 1. Stores throw it too. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}
