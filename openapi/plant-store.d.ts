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
         * @description Stores a new plant. Sending the identical plant again answers 200 again (a safe retry); another plant with a stored id answers 409 and the stored plant is unchanged. POST is the only method /plants takes: any other answers 405 with `Allow: POST` and an Error record, without needing a token; `OPTIONS /plants` answers 204 with `Allow: POST, OPTIONS`. The body may be sent with `Content-Encoding: gzip`, `deflate` (zlib format) or `br`; decoded, it must still fit BODY_LIMIT.
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
         * @description A plant to create. Properties other than id, name and tag are accepted and ignored.
         * @example {
         *       "id": 10,
         *       "name": "Monstera",
         *       "tag": "tropical"
         *     }
         */
        NewPlant: {
            /**
             * Format: int64
             * @description Identification number of the plant: an integer from -9223372036854775808 to 9223372036854775807, exact over the whole range
             * @example 10
             */
            id: number | bigint;
            /**
             * @description The name of the plant
             * @example Monstera
             */
            name: string;
            /**
             * @description Tag that specifies the type of the plant
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
             * @description The name of the plant
             * @example Monstera
             */
            name: string;
            /**
             * @description Tag that specifies the type of the plant
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
            /**
             * @description "ok" when the process is up, "ready" when it can serve
             * @example ok
             * @example ready
             */
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
            /** @description The process answers: `{"status":"ok"}` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description Malformed HTTP (400), headers over MAX_HEADER_BYTES (431), or a request slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS (408); the connection is closed */
            "4XX": {
                headers: {
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
            /** @description Ready for traffic: `{"status":"ready"}` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description Not ready: the store is unreachable, creates have failed for longer than the statement timeout with no success (PostgreSQL), the service is shutting down, or it is overloaded */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Malformed HTTP (400), headers over MAX_HEADER_BYTES (431), or a request slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS (408); the connection is closed */
            "4XX": {
                headers: {
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
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Plant"];
                };
            };
            /** @description The body is not UTF-8 JSON, not an object, or a field is missing or of the wrong type (no type coercion); or it is not valid data for its Content-Encoding */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The bearer token is missing or not valid; carries WWW-Authenticate */
            401: {
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
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT, as sent or once decoded */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The content type is not application/json, or the Content-Encoding is not gzip, deflate, br or identity (then with Accept-Encoding: gzip, deflate, br) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Over RATE_LIMIT_PER_MINUTE for this token (only when it is set); carries Retry-After and RateLimit headers */
            429: {
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
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Overloaded, not ready, or the store is unavailable: nothing was stored; or (PostgreSQL) the store lost the write after it was sent: the message says the outcome is unknown, and sending the identical request again is safe (200 once the plant is stored). Carries Retry-After */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The memory store is full (MAX_PLANTS) */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
