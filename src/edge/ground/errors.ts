/**
 * @module edge/ground/errors — errors as data (issue 17). Every problem with a request is an {@link Issue}: a `code`
 * (what kind of problem), the dotted field path and a message that names the value and the fix. The API answers with
 * the status its codes map to, in one table ({@link ISSUE_STATUS}), and the JSON body
 * `{ error: { message, issues: [{ code, path, message }] } }`; nothing decides a status from a message's text.
 */

/** The statuses the API answers errors with. */
export type ApiErrorStatus = 400 | 401 | 403 | 404 | 413 | 429 | 503;

/** Each issue code and the HTTP status it answers with. */
export const ISSUE_STATUS = {
  /** a value of the request is wrong (its message names the field, the value and the fix) */
  invalid: 400,
  /** the run plans more episodes than `AJET_MAX_EPISODES_PER_RUN` */
  too_many_episodes: 400,
  /** no credential, or one that matches no token */
  unauthenticated: 401,
  /** the read-only token on a route that writes */
  forbidden: 403,
  /** no such run, route, asset or transcript */
  not_found: 404,
  /** a body, inline dataset or generator over this Worker's limits */
  too_large: 413,
  /** the token has `AJET_MAX_RUNS_IN_FLIGHT` runs in flight */
  too_many_runs: 429,
  /** the client address failed authentication too often (edge/api/auth-throttle): wait Retry-After */
  too_many_failures: 429,
  /** the Worker has no usable `AJET_API_TOKEN` */
  unconfigured: 503,
} as const satisfies Record<string, ApiErrorStatus>;

/** What kind of problem an issue is (a key of {@link ISSUE_STATUS}). */
export type IssueCode = keyof typeof ISSUE_STATUS;

/** One problem with a request: its code, the dotted field path and a message that says the fix. */
export interface Issue {
  code: IssueCode;
  path: string;
  message: string;
}

/** An `invalid` issue (the common case: a value is wrong). */
export function invalid(path: string, message: string): Issue {
  return { code: "invalid", path, message };
}

/** The status a list of issues answers with: the highest its codes map to; 400 for none. */
export function statusOf(issues: readonly Pick<Issue, "code">[]): ApiErrorStatus {
  return issues.reduce<ApiErrorStatus>((s, i) => (ISSUE_STATUS[i.code] > s ? ISSUE_STATUS[i.code] : s), 400);
}

/** An HTTP error with a JSON body, its status from its issues' codes; thrown by routes, rendered by the app's `onError`. */
export class ApiError extends Error {
  readonly status: ApiErrorStatus;

  /** @param message what went wrong, in a few words @param issues each problem (at least one: it carries the status) */
  constructor(
    message: string,
    readonly issues: Issue[],
  ) {
    super(message);
    this.name = "ApiError";
    this.status = statusOf(issues);
  }

  toJSON(): { error: { message: string; issues: Issue[] } } {
    return { error: { message: this.message, issues: this.issues } };
  }
}
