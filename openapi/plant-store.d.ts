export interface paths {
    "/livez": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The process is up */
        get: operations["getLiveness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The store is reachable and the service is not shutting down */
        get: operations["getReadiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/plants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create a plant
         * @description Stores a plant; the identical plant again is a 200 (a safe retry), another plant with its id a 409
         */
        post: operations["addPlant"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * @description A plant to create; properties other than id, name and tag are accepted and ignored
         * @example {
         *       "id": 10,
         *       "name": "Monstera",
         *       "tag": "tropical"
         *     }
         */
        NewPlant: {
            /**
             * Format: int64
             * @description Identification number of the plant: an exact integer from -9223372036854775808 to 9223372036854775807
             * @example 10
             */
            id: number | bigint;
            /**
             * @description The name of the plant. No U+0000 and no unpaired surrogate: the service refuses either with 400
             * @example Monstera
             */
            name: string;
            /**
             * @description Tag that specifies the type of the plant. No U+0000 and no unpaired surrogate: the service refuses either with 400
             * @example tropical
             */
            tag?: string;
        };
        /**
         * @description A plant of the store
         * @example {
         *       "name": "Monstera",
         *       "tag": "tropical"
         *     }
         */
        Plant: {
            /**
             * @description The name of the plant. No U+0000 and no unpaired surrogate: the service refuses either with 400
             * @example Monstera
             */
            name: string;
            /**
             * @description Tag that specifies the type of the plant. No U+0000 and no unpaired surrogate: the service refuses either with 400
             * @example tropical
             */
            tag?: string;
        };
        /**
         * @description Every non-2xx reply
         * @example {
         *       "error": 409,
         *       "message": "a plant with id 10 already exists with another name or tag"
         *     }
         */
        Error: {
            /**
             * Format: int32
             * @description The HTTP status code of the reply
             * @example 409
             */
            error: number;
            /**
             * @description What went wrong, for a person; generic for 5xx statuses
             * @example a plant with id 10 already exists with another name or tag
             */
            message: string;
        };
        /**
         * @description The answer of a probe
         * @example {
         *       "status": "ok"
         *     }
         * @example {
         *       "status": "ready"
         *     }
         */
        Health: {
            /** @description "ok" when the process is up, "ready" when it can serve */
            status: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getLiveness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The process is up */
            200: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description Malformed HTTP, such as HTTP/1.1 without Host */
            "4XX": {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getReadiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The store is reachable and the service is not shutting down */
            200: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description The store is failing, or the service is closing or overloaded */
            503: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    /** @description Seconds to wait before retrying */
                    "retry-after"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Malformed HTTP, such as HTTP/1.1 without Host */
            "4XX": {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    addPlant: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewPlant"];
            };
        };
        responses: {
            /** @description The plant as stored; tag only when it was given */
            200: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    /** @description With RATE_LIMIT_PER_MINUTE: the requests allowed per minute for this client */
                    "ratelimit-limit"?: number;
                    /** @description With RATE_LIMIT_PER_MINUTE: the requests left in the current minute */
                    "ratelimit-remaining"?: number;
                    /** @description With RATE_LIMIT_PER_MINUTE: the seconds until the minute resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Plant"];
                };
            };
            /** @description The body is not a NewPlant in UTF-8 JSON (no type coercion), or the request is malformed */
            400: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token is missing or not valid */
            401: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    /** @description `Bearer realm="plants"`, with `error="invalid_token"` when a token was refused */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request took over HEADERS_TIMEOUT_MS or REQUEST_TIMEOUT_MS */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A plant with this id exists with another name or tag */
            409: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is over BODY_LIMIT, as sent or once decoded */
            413: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON, or its Content-Encoding is unknown */
            415: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    /** @description The content codings the service decodes: gzip, deflate, br */
                    "accept-encoding"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An Expect other than 100-continue; nothing was stored */
            417: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The client (by name, or by token when unnamed) is over RATE_LIMIT_PER_MINUTE */
            429: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    /** @description Seconds to wait before retrying */
                    "retry-after"?: number;
                    /** @description With RATE_LIMIT_PER_MINUTE: the requests allowed per minute for this client */
                    "ratelimit-limit"?: number;
                    /** @description With RATE_LIMIT_PER_MINUTE: the requests left in the current minute */
                    "ratelimit-remaining"?: number;
                    /** @description With RATE_LIMIT_PER_MINUTE: the seconds until the minute resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The headers are larger than MAX_HEADER_BYTES */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected error; the detail is in the log only */
            500: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Overloaded, not ready, closing or the store failed (PostgreSQL: perhaps stored); replay it */
            503: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    /** @description Seconds to wait before retrying */
                    "retry-after"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The store is full (MAX_PLANTS in memory, or the disk) */
            507: {
                headers: {
                    /** @description The caller's X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
