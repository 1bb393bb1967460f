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
         * @description Stores a new plant. Sending the identical plant again answers 200 again (a safe retry); another plant with a stored id answers 409 and the stored plant is unchanged. POST is the only method that acts on /plants: any other but OPTIONS answers 405 with `Allow: POST, OPTIONS` and an Error record, without needing a token (listed under 405 here); `OPTIONS /plants` answers 204 with `Allow: POST, OPTIONS`. The body may be sent with `Content-Encoding: gzip`, `deflate` (zlib format) or `br`; decoded, it must still fit BODY_LIMIT.
         */
        post: operations["addPlant"];
        delete?: never;
        /**
         * The methods /plants answers to
         * @description Answers 204 with `Allow: POST, OPTIONS` and no body, without a token. With CORS_ORIGINS set, a browser's preflight from a listed origin gets the same 204 with its Access-Control-* headers.
         */
        options: operations["describePlants"];
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * @description A plant to create. Properties other than id, name and tag are accepted and ignored, at any depth: `__proto__` and `constructor.prototype` keys too, which are dropped as the body is parsed (they never reach an object).
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
             * @description The name of the plant. No U+0000 and no unpaired surrogate (a \uD800-\uDFFF escape that is not a high-low pair): the service refuses either with 400
             * @example Monstera
             */
            name: string;
            /**
             * @description Tag that specifies the type of the plant. No U+0000 and no unpaired surrogate (a \uD800-\uDFFF escape that is not a high-low pair): the service refuses either with 400
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
             * @description The name of the plant. No U+0000 and no unpaired surrogate (a \uD800-\uDFFF escape that is not a high-low pair): the service refuses either with 400
             * @example Monstera
             */
            name: string;
            /**
             * @description Tag that specifies the type of the plant. No U+0000 and no unpaired surrogate (a \uD800-\uDFFF escape that is not a high-low pair): the service refuses either with 400
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
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description The request line is not HTTP/1.x (HTTP/2.0 or HTTP/0.9 in cleartext, an HTTP/2 connection preface, a version the parser refuses): the connection is closed. The service speaks HTTP/1.1 and 1.0 only */
            505: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Malformed HTTP (400), headers over MAX_HEADER_BYTES (431), or a request slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS (408): the connection is closed; or no Host in HTTP/1.1, two Host headers, or one that is not host[:port] (400, with a request id) */
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
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description Not ready: the store is unreachable, creates have failed for longer than the statement timeout with no success (PostgreSQL), the service is shutting down, or it is overloaded */
            503: {
                headers: {
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    /** @description Seconds to wait before retrying */
                    "retry-after"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request line is not HTTP/1.x (HTTP/2.0 or HTTP/0.9 in cleartext, an HTTP/2 connection preface, a version the parser refuses): the connection is closed. The service speaks HTTP/1.1 and 1.0 only */
            505: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Malformed HTTP (400), headers over MAX_HEADER_BYTES (431), or a request slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS (408): the connection is closed; or no Host in HTTP/1.1, two Host headers, or one that is not host[:port] (400, with a request id) */
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
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    /** @description Only with RATE_LIMIT_PER_MINUTE set: requests allowed per window (a minute) for this client (IETF RateLimit header fields, draft) */
                    "ratelimit-limit"?: number;
                    /** @description Only with RATE_LIMIT_PER_MINUTE set: requests left in the current window */
                    "ratelimit-remaining"?: number;
                    /** @description Only with RATE_LIMIT_PER_MINUTE set: seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Plant"];
                };
            };
            /** @description The body is not UTF-8 JSON, not an object, or a field is missing or of the wrong type (no type coercion); or it is not valid data for its Content-Encoding; or the request itself is malformed (malformed HTTP; no Host in HTTP/1.1, two Host headers or one that is not host[:port]; two Authorization headers: then with WWW-Authenticate error="invalid_request") */
            400: {
                headers: {
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    /** @description The bearer challenge: `Bearer realm="plants"`, with `error="invalid_token"` when a token was sent and refused, `error="invalid_request"` (on a 400) when two Authorization headers were sent */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The bearer token is missing or not valid; carries WWW-Authenticate */
            401: {
                headers: {
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    /** @description The bearer challenge: `Bearer realm="plants"`, with `error="invalid_token"` when a token was sent and refused, `error="invalid_request"` (on a 400) when two Authorization headers were sent */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Never to POST: every other method on /plants but OPTIONS (GET, HEAD, PUT, PATCH, DELETE, QUERY, ...) answers 405 with `Allow: POST, OPTIONS`, without a token and without reading the body. Listed here because this document describes only POST and OPTIONS on /plants */
            405: {
                headers: {
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    /** @description The methods the path answers to, on a 405 and on the 204 to OPTIONS: `POST, OPTIONS` for /plants, `GET, HEAD` for /livez and /readyz */
                    allow?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Headers or body slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS; nothing was processed and the connection is closed */
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
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT, as sent or once decoded */
            413: {
                headers: {
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The content type is not application/json, or the Content-Encoding is not gzip, deflate, br or identity (then with Accept-Encoding: gzip, deflate, br) */
            415: {
                headers: {
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    /** @description The content codings the service decodes, on a 415 for an unsupported Content-Encoding */
                    "accept-encoding"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An Expect other than 100-continue, once the token is accepted (without a valid token: the 401); nothing was stored */
            417: {
                headers: {
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Over RATE_LIMIT_PER_MINUTE for this token (only when it is set); carries Retry-After and RateLimit headers */
            429: {
                headers: {
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    /** @description Seconds to wait before retrying */
                    "retry-after"?: number;
                    /** @description Only with RATE_LIMIT_PER_MINUTE set: requests allowed per window (a minute) for this client (IETF RateLimit header fields, draft) */
                    "ratelimit-limit"?: number;
                    /** @description Only with RATE_LIMIT_PER_MINUTE set: requests left in the current window */
                    "ratelimit-remaining"?: number;
                    /** @description Only with RATE_LIMIT_PER_MINUTE set: seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Headers over MAX_HEADER_BYTES; the connection is closed */
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
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Overloaded, not ready, or the store is unavailable: nothing was stored; or (PostgreSQL) the store lost the write after it was sent: the message says the outcome is unknown, and sending the identical request again is safe (200 once the plant is stored). Carries Retry-After */
            503: {
                headers: {
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    /** @description Seconds to wait before retrying */
                    "retry-after"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request line is not HTTP/1.x (HTTP/2.0 or HTTP/0.9 in cleartext, an HTTP/2 connection preface, a version the parser refuses): the connection is closed. The service speaks HTTP/1.1 and 1.0 only */
            505: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The memory store is full: MAX_PLANTS plants, or plants holding MEMORY_STORE_MAX_BYTES (by default an eighth of a container memory limit). Load never causes it: memory pressure from requests is a 503 */
            507: {
                headers: {
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    describePlants: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No content; `Allow` lists the methods */
            204: {
                headers: {
                    /** @description The request's id, in every log line about it: the caller's own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists) */
                    "x-request-id"?: string;
                    /** @description The methods the path answers to, on a 405 and on the 204 to OPTIONS: `POST, OPTIONS` for /plants, `GET, HEAD` for /livez and /readyz */
                    allow?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request line is not HTTP/1.x (HTTP/2.0 or HTTP/0.9 in cleartext, an HTTP/2 connection preface, a version the parser refuses): the connection is closed. The service speaks HTTP/1.1 and 1.0 only */
            505: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Malformed HTTP (400), headers over MAX_HEADER_BYTES (431), or a request slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS (408): the connection is closed; or no Host in HTTP/1.1, two Host headers, or one that is not host[:port] (400, with a request id) */
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
}
