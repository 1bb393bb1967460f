import type { Plant, PlantId } from '../schemas.js'

/** What an insert did: stored it, found the identical plant already stored, or found another one. */
export type InsertOutcome = 'created' | 'same' | 'conflict'

/**
 * The port every store implements. A plant is never overwritten: an id is stored once, and a later
 * insert of the same id reports whether it matched. Failures are the named errors of errors.ts
 * (StoreFullError, StoreUnavailableError), never a driver's own error.
 */
export interface PlantRepository {
  insert (id: PlantId, plant: Plant): Promise<InsertOutcome>
  /** Resolves when the store can take inserts; rejects with the reason when it cannot. */
  ready (): Promise<void>
  /** Called once, after the last request in flight. */
  close (): Promise<void>
  /** Optional, for metrics: what the store knows about itself, read when metrics are scraped. */
  stats? (): StoreStats
  /** Optional, for metrics: a store that commits inserts in groups reports each group's size. */
  observe? (observer: StoreObserver): void
}

/** What a store knows of itself, for its gauges; a field it leaves out is not exported. */
export type StoreStats = Partial<Record<'plants' | 'capacity' |
  'poolConnections' | 'poolIdleConnections' | 'poolWaitingRequests', number>>

/** Told the size of each group commit (one transaction or statement) when it is sent. */
export interface StoreObserver { batch (size: number): void }

export const samePlant = (a: Plant, b: Plant): boolean => a.name === b.name && a.tag === b.tag
