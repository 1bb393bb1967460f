/**
 * A bad setting: its message is the one line the process prints before it exits 1. Here, not in
 * config.ts, so that a store (src/plants/) can refuse its own settings without importing configuration.
 */
export class ConfigError extends Error {
  override name = 'ConfigError'
}
