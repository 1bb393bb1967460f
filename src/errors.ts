import createError from '@fastify/error'

// Named errors that carry their status. The service and the plugins throw these; routes never map statuses.
/** 'JSON', 'UTF-8', or a content coding's data ('gzip data'). */
export const InvalidBodyError = createError('PLANTS_INVALID_BODY', 'body is not valid %s', 400)
export const UnsupportedEncodingError = createError('PLANTS_UNSUPPORTED_ENCODING',
  'content-encoding "%s" is not supported: send the body with one of %s, or with none', 415)
export const PlantConflictError = createError('PLANTS_CONFLICT',
  'a plant with id %s already exists with another name or tag', 409)
export const StoreFullError = createError('PLANTS_STORE_FULL', 'the plant store is full', 507)
export const StoreUnavailableError = createError('PLANTS_STORE_UNAVAILABLE',
  'the plant store is unavailable, retry later', 503)
/** The write was sent but not confirmed: it may be stored or not; the same request is safe to send again. */
export const StoreOutcomeUnknownError = createError('PLANTS_STORE_OUTCOME_UNKNOWN',
  'the plant store did not confirm the write: the outcome is unknown; ' +
  'retrying the identical request is safe, it answers 200 if the plant was stored', 503)
/** /readyz while creates fail: reads may work (a synchronous standby gone), writes do not. */
export const WritesFailingError = createError('PLANTS_WRITES_FAILING',
  'the service is not ready: creates have failed for %s ms with no success', 503)
export const NotReadyError = createError('PLANTS_NOT_READY', 'the service is not ready', 503)
export const OverloadedError = createError('PLANTS_OVERLOADED', 'the service is overloaded, retry later', 503)
export const RateLimitedError = createError('PLANTS_RATE_LIMITED',
  'too many requests with this token: at most %s per minute, retry in %s s', 429)
export const RouteNotFoundError = createError('PLANTS_ROUTE_NOT_FOUND', 'no route for %s %s', 404)
export const MethodNotAllowedError = createError('PLANTS_METHOD_NOT_ALLOWED',
  '%s is not allowed on %s; allowed: %s', 405)
export const MissingHostError = createError('PLANTS_MISSING_HOST', 'an HTTP/1.1 request must carry a Host header', 400)
export const ExpectationFailedError = createError('PLANTS_EXPECTATION_FAILED', 'Expect must be 100-continue', 417)

/** A store's named failures (plants/plant-repository.ts): the one list of them. */
const STORE_ERRORS = [StoreUnavailableError, StoreOutcomeUnknownError, StoreFullError, WritesFailingError]
export const isStoreError = (error: unknown): boolean => STORE_ERRORS.some((StoreError) => error instanceof StoreError)
