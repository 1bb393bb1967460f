import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { PlantService } from '../plants/plant-service.js'
import { ErrorRecord, NewPlant, Plant } from '../schemas.js'

export interface PlantRoutesOptions {
  plants: PlantService
}

const error = (description: string) => Type.Ref(ErrorRecord, { description })

/** POST /plants: the schema validates, the service decides, the reply schema serializes. */
export const plantRoutes: FastifyPluginAsyncTypebox<PlantRoutesOptions> = async (app, { plants }) => {
  app.post('/plants', {
    schema: {
      summary: 'Create a plant',
      description: 'Stores a new plant. Sending the identical plant again answers 200 again (a safe retry); another plant with a stored id answers 409 and the stored plant is unchanged.',
      operationId: 'addPlant',
      body: Type.Ref(NewPlant),
      response: {
        200: Type.Ref(Plant, { description: 'The plant as stored; tag only when it was given' }),
        400: error('The body is not UTF-8 JSON, not an object, or a field is missing or of the wrong type (no type coercion)'),
        401: error('The bearer token is missing or not valid; carries WWW-Authenticate'),
        409: error('A plant with this id exists with another name or tag'),
        413: error('The body is larger than BODY_LIMIT'),
        415: error('The content type is not application/json'),
        429: error('Over RATE_LIMIT_PER_MINUTE for this token (only when it is set); carries Retry-After and RateLimit headers'),
        500: error('An unexpected error; the detail is in the log only'),
        503: error('Overloaded, not ready, or the store is unavailable; nothing was stored; carries Retry-After'),
        507: error('The memory store is full (MAX_PLANTS)')
      }
    }
  }, (request) => plants.create(request.body))
}
