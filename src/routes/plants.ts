import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { PlantService } from '../plants/plant-service.js'
import { errorResponse as error, jsonResponse, NewPlant, Plant } from '../schemas.js'

export interface PlantRoutesOptions { plants: PlantService }

const RATE_LIMIT_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'] as const
const bare = <T extends object>(response: T) => ({ ...response, headers: {} })

/** POST /plants: the schema validates, the service decides, the reply schema serializes. */
export const plantRoutes: FastifyPluginAsyncTypebox<PlantRoutesOptions> = async (app, { plants }) => {
  app.post('/plants', {
    schema: {
      summary: 'Create a plant',
      description: 'Stores a new plant; sending the identical plant again answers 200 again (a safe retry), and ' +
        'another plant with a stored id answers 409. The body may be sent with `Content-Encoding: gzip`, `deflate` ' +
        'or `br`; decoded, it must still fit BODY_LIMIT.',
      operationId: 'addPlant',
      body: Type.Ref(NewPlant),
      response: {
        200: jsonResponse('The plant as stored; tag only when it was given', Plant, [...RATE_LIMIT_HEADERS]),
        400: error(400, 'The body is not a NewPlant in UTF-8 JSON (no type coercion), or the request is malformed'),
        401: error(401, 'The bearer token is missing or not valid', ['www-authenticate']),
        // Answered on the socket before any hook (errors.ts, clientErrorHandler): no x-request-id.
        408: bare(error(408, 'The headers or the body took longer than HEADERS_TIMEOUT_MS or REQUEST_TIMEOUT_MS; ' +
          'nothing was stored and the connection closes')),
        409: error(409, 'A plant with this id exists with another name or tag'),
        413: error(413, 'The body is larger than BODY_LIMIT, as sent or once decoded'),
        415: error(415, 'The content type is not application/json, or the Content-Encoding is not decoded here',
          ['accept-encoding']),
        417: error(417, 'An Expect other than 100-continue; nothing was stored'),
        429: error(429, 'Over RATE_LIMIT_PER_MINUTE for this token', ['retry-after', ...RATE_LIMIT_HEADERS]),
        431: bare(error(431, 'The headers are larger than MAX_HEADER_BYTES; the connection closes')),
        500: error(500, 'An unexpected error; the detail is in the log only'),
        503: error(503, 'Overloaded, not ready, or the store did not take the write; the message says whether ' +
          'the outcome is unknown, and the identical request is always safe to send again', ['retry-after']),
        507: error(507, 'The memory store holds MAX_PLANTS plants')
      }
    }
  }, (request) => plants.create(request.body))
}
