import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { PlantService } from '../plants/plant-service.js'
import {
  bareErrorResponse as bareError, errorResponse as error, malformedHttpResponse, NewPlant, Plant, responseHeaders
} from '../schemas.js'

export interface PlantRoutesOptions { plants: PlantService }

/** OPTIONS /plants, open like a 404: registered outside the auth scope, so no token and no rate limit. */
export const plantMethodRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // Also the onRequest hook: content sent with an OPTIONS is never read, so it cannot make a 413 or 415.
  const describe = (_request: FastifyRequest, reply: FastifyReply): void => {
    // The same methods as the edge's 405 to any other method (they come from the routes).
    reply.code(204).header('allow', 'POST, OPTIONS').send()
  }
  app.options('/plants', {
    schema: {
      summary: 'The methods /plants answers to',
      description: 'Answers 204 with `Allow: POST, OPTIONS` and no body, without a token. With CORS_ORIGINS set, a ' +
        'browser\'s preflight from a listed origin gets the same 204 with its Access-Control-* headers.',
      operationId: 'describePlants',
      security: [],
      response: {
        204: { description: 'No content; `Allow` lists the methods', headers: responseHeaders('allow'), type: 'null' },
        '4xx': malformedHttpResponse
      }
    },
    onRequest: describe
  }, describe)
}

const RATE_LIMIT_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'] as const

/** POST /plants: the schema validates, the service decides, the reply schema serializes. */
export const plantRoutes: FastifyPluginAsyncTypebox<PlantRoutesOptions> = async (app, { plants }) => {
  app.post('/plants', {
    schema: {
      summary: 'Create a plant',
      description: 'Stores a new plant. Sending the identical plant again answers 200 again (a safe retry); another ' +
        'plant with a stored id answers 409 and the stored plant is unchanged. POST is the only method that acts on ' +
        '/plants: any other but OPTIONS answers 405 with `Allow: POST, OPTIONS` and an Error record, without needing ' +
        'a token (listed under 405 here); `OPTIONS /plants` answers 204 with `Allow: POST, OPTIONS`. The body may be ' +
        'sent with `Content-Encoding: gzip`, `deflate` (zlib format) or `br`; decoded, it must still fit BODY_LIMIT.',
      operationId: 'addPlant',
      body: Type.Ref(NewPlant),
      response: {
        200: {
          description: 'The plant as stored; tag only when it was given',
          headers: responseHeaders(...RATE_LIMIT_HEADERS),
          content: { 'application/json': { schema: Type.Ref(Plant) } }
        },
        400: error('The body is not UTF-8 JSON, not an object, or a field is missing or of the wrong type (no type ' +
          'coercion); or it is not valid data for its Content-Encoding; or the request itself is malformed ' +
          '(malformed HTTP; no Host in HTTP/1.1, two Host headers or one that is not host[:port]; two Authorization ' +
          'headers: then with WWW-Authenticate error="invalid_request")',
        ['invalidId', 'invalidGzip', 'missingHost', 'duplicateHost', 'invalidHost', 'duplicateAuthorization',
          'notHttp'],
        ['www-authenticate']),
        401: error('The bearer token is missing or not valid; carries WWW-Authenticate',
          ['missingToken', 'invalidToken'], ['www-authenticate']),
        405: error('Never to POST: every other method on /plants but OPTIONS (GET, HEAD, PUT, PATCH, DELETE, QUERY, ' +
          '...) answers 405 with `Allow: POST, OPTIONS`, without a token and without reading the body. Listed here ' +
          'because this document describes only POST and OPTIONS on /plants',
        ['methodNotAllowed'], ['allow']),
        408: bareError('Headers or body slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS; nothing was processed ' +
          'and the connection is closed', ['tooSlow']),
        409: error('A plant with this id exists with another name or tag', ['conflict']),
        413: error('The body is larger than BODY_LIMIT, as sent or once decoded', ['tooLarge', 'tooLargeDecoded']),
        415: error('The content type is not application/json, or the Content-Encoding is not gzip, deflate, br or ' +
          'identity (then with Accept-Encoding: gzip, deflate, br)', ['notJson', 'unsupportedEncoding'],
        ['accept-encoding']),
        417: error('An Expect other than 100-continue, once the token is accepted (without a valid token: the 401); ' +
          'nothing was stored', ['expectationFailed']),
        429: error('Over RATE_LIMIT_PER_MINUTE for this token (only when it is set); carries Retry-After and ' +
          'RateLimit headers', ['rateLimited'], ['retry-after', ...RATE_LIMIT_HEADERS]),
        431: bareError('Headers over MAX_HEADER_BYTES; the connection is closed', ['headersTooLarge']),
        500: error('An unexpected error; the detail is in the log only', ['unexpected']),
        503: error('Overloaded, not ready, or the store is unavailable: nothing was stored; or (PostgreSQL) the ' +
          'store lost the write after it was sent: the message says the outcome is unknown, and sending the ' +
          'identical request again is safe (200 once the plant is stored). Carries Retry-After',
        ['overloaded', 'storeUnavailable', 'storeOutcomeUnknown'], ['retry-after']),
        507: error('The memory store is full: MAX_PLANTS plants, or plants holding MEMORY_STORE_MAX_BYTES (by ' +
          'default an eighth of a container memory limit). Load never causes it: memory pressure from requests is a ' +
          '503', ['storeFull'])
      }
    }
  }, (request) => plants.create(request.body))
}
