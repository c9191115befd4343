/** @module edge/errors — JSON errors of the Worker API: `{ error: { message, issues: [{ path, message }] } }`. */

/** One problem with a request: the dotted field path and a message that says the fix. */
export interface Issue {
  path: string;
  message: string;
}

/** An HTTP error with a JSON body; thrown by routes, rendered by the app's `onError`. */
export class ApiError extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 500,
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
