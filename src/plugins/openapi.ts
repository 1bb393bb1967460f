import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * The OpenAPI 3.1 document from the routes' schemas at /openapi.json, and Swagger UI at /docs (served
 * from the package: nothing fetched at run time); both open. openapi/openapi.json is a committed copy.
 */
export const openapi = fp(async function openapi (app: FastifyInstance) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plant Store',
        version: '1.0.0',
        description: 'Keeps a store of plants. Every error reply with a body is an Error record whose `error` is the ' +
          'HTTP status: also a 404 for another path, a 405 with `Allow: POST` for another method on /plants, ' +
          '400, 408 or 431 for malformed HTTP (the connection closes), and with CORS_ORIGINS a 204 to any preflight.',
        license: { name: 'MIT', identifier: 'MIT' }
      },
      servers: [{ url: '/', description: 'The host that serves this document' }],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'One of the tokens in API_TOKENS or API_TOKENS_FILE'
          }
        }
      },
      security: [{ bearerAuth: [] }]
    },
    // Shared schemas keep their own names ($id) under components.schemas.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}`
    }
  })
  // No online-validator badge, which would send the document to validator.swagger.io.
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { tryItOutEnabled: true, validatorUrl: null } })
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger())
})
