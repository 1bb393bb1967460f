import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { PlantService } from '../plants/plant-service.js'
import { CONFLICT, errorResponse as error, INT64_MAX, INT64_MIN, jsonResponse, NewPlant, Plant } from '../schemas.js'

const RATE_LIMIT_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'] as const
const noHeaders = <T extends object>(response: T) => ({ ...response, headers: {} })

/** POST /plants: the schema validates, the service decides, the reply schema serializes. */
export const plantRoutes: FastifyPluginAsyncTypebox<{ plants: PlantService }> = async (app, { plants }) => {
  app.post('/plants', {
    schema: {
      summary: 'Create a plant',
      description: 'Stores a plant; the identical plant again is a 200 (a safe retry), another plant with its id a 409',
      operationId: 'addPlant',
      body: Type.Ref(NewPlant),
      response: {
        200: jsonResponse('The plant as stored; tag only when it was given', Plant, RATE_LIMIT_HEADERS),
        400: error(400, 'The body is not a NewPlant in UTF-8 JSON (no type coercion), or the request is malformed',
          `body/id must be an integer between ${INT64_MIN} and ${INT64_MAX}`),
        401: error(401, 'The token is missing or not valid', 'missing authorization header', ['www-authenticate']),
        // Answered on the socket before any hook (clientErrorHandler in plugins/http-edge.ts): no x-request-id.
        408: noHeaders(error(408, 'The request took over HEADERS_TIMEOUT_MS or REQUEST_TIMEOUT_MS', 'Request Timeout')),
        409: error(409, 'A plant with this id exists with another name or tag', CONFLICT),
        413: error(413, 'The body is over BODY_LIMIT, as sent or once decoded', 'Request body is too large'),
        415: error(415, 'The body is not JSON, or its Content-Encoding is unknown', 'Unsupported Media Type',
          ['accept-encoding']),
        417: error(417, 'An Expect other than 100-continue; nothing was stored', 'Expect must be 100-continue'),
        429: error(429, 'The client (by name, or by token when unnamed) is over RATE_LIMIT_PER_MINUTE', 'too many ' +
          'requests with this token: at most 600 per minute, retry in 42 s', ['retry-after', ...RATE_LIMIT_HEADERS]),
        431: noHeaders(error(431, 'The headers are larger than MAX_HEADER_BYTES', 'Request Header Fields Too Large')),
        500: error(500, 'An unexpected error; the detail is in the log only', 'Internal Server Error'),
        503: error(503, 'Overloaded, not ready, closing or the store failed (PostgreSQL: perhaps stored); replay it',
          'the plant store is unavailable, retry later', ['retry-after']),
        507: error(507, 'The store is full (MAX_PLANTS in memory, or the disk)', 'the plant store is full')
      }
    }
  }, (request) => plants.create(request.body))
}
