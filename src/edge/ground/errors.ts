/** @module edge/ground/errors — JSON errors of the Worker API: `{ error: { message, issues: [{ path, message }] } }`. */

/** One problem with a request: the dotted field path and a message that says the fix. */
export interface Issue {
  path: string;
  message: string;
}

/** The statuses the API answers errors with. */
export type ApiErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 429 | 500 | 503;

/** An HTTP error with a JSON body; thrown by routes, rendered by the app's `onError`. */
export class ApiError extends Error {
  constructor(
    readonly status: ApiErrorStatus,
    message: string,
    readonly issues: Issue[],
  ) {
    super(message);
    this.name = "ApiError";
  }

  toJSON(): { error: { message: string; issues: Issue[] } } {
    return { error: { message: this.message, issues: this.issues } };
  }
}
