/**
 * @module emulator/http/fastapi — FastAPI/Starlette answer shapes (spec §1): JSON bodies, `HTTPException`
 * (`{"detail": "..."}`), request validation 422s in pydantic's format, the plain-text 500 of an uncaught
 * exception, and the body reading FastAPI does before validating a pydantic body parameter.
 */
import { z } from "zod";
import { ServerText } from "../../protocol/index.ts";
import { fastApiJsonText, SERVER_FLOAT_KEYS } from "../python/json-dumps.ts";
import { PyJsonDecodeError, pyJsonLoads } from "../python/json-parse.ts";

/** A JSON response rendered like FastAPI's `JSONResponse` (`content-type: application/json`). */
export function jsonResponse(body: unknown, status = 200): Response {
  return new Response(fastApiJsonText(body, SERVER_FLOAT_KEYS), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/** `raise HTTPException(status, detail)` → `{"detail": detail}` with that status. */
export function httpException(status: number, detail: unknown): Response {
  return jsonResponse({ detail }, status);
}

/** An uncaught Python exception (e.g. a failed `assert`) → 500 `text/plain` `Internal Server Error`. */
export function internalServerError(): Response {
  return new Response(ServerText.internalServerError, {
    status: 500,
    headers: { "content-type": "text/plain; charset=utf-8" },
  });
}

/** One pydantic error item as FastAPI returns it (no `url`). */
export interface ValidationErrorItem {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

/** `422 {"detail": [...]}`. */
export function validationError(items: ValidationErrorItem[]): Response {
  return jsonResponse({ detail: items }, 422);
}

function valueAt(root: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let node = root;
  for (const key of path) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** Maps zod's expected type to pydantic's error type and message for a present-but-wrong value. */
function wrongTypeItem(expected: string, input: unknown): Pick<ValidationErrorItem, "type" | "msg"> {
  const isStr = typeof input === "string";
  switch (expected) {
    case "string":
      return { type: "string_type", msg: "Input should be a valid string" };
    case "number":
      return isStr
        ? { type: "float_parsing", msg: "Input should be a valid number, unable to parse string as a number" }
        : { type: "float_type", msg: "Input should be a valid number" };
    case "int":
      if (typeof input === "number") return { type: "int_from_float", msg: "Input should be a valid integer, got a number with a fractional part" };
      return isStr
        ? { type: "int_parsing", msg: "Input should be a valid integer, unable to parse string as an integer" }
        : { type: "int_type", msg: "Input should be a valid integer" };
    case "boolean":
      return isStr
        ? { type: "bool_parsing", msg: "Input should be a valid boolean, unable to interpret input" }
        : { type: "bool_type", msg: "Input should be a valid boolean" };
    case "record":
      return { type: "dict_type", msg: "Input should be a valid dictionary" };
    case "array":
      return { type: "list_type", msg: "Input should be a valid list" };
    default:
      return { type: "model_attributes_type", msg: "Input should be a valid dictionary or object to extract fields from" };
  }
}

/**
 * Converts zod issues into pydantic/FastAPI error items: a missing field → `missing` / `Field required` with the
 * enclosing object as `input` (transcript probe `claim_episode:validation_error_missing_field`); a wrong type →
 * the matching pydantic type (approximate for unions, see the emulator report).
 */
export function zodIssuesToFastApi(issues: readonly z.core.$ZodIssue[], body: unknown): ValidationErrorItem[] {
  return issues.map((issue) => {
    const loc: Array<string | number> = ["body", ...issue.path.map((p) => (typeof p === "number" ? p : String(p)))];
    const input = valueAt(body, issue.path);
    if (issue.code === "invalid_type" && input === undefined) {
      return { type: "missing", loc, msg: "Field required", input: valueAt(body, issue.path.slice(0, -1)) };
    }
    const expected = issue.code === "invalid_type" ? String(issue.expected) : "union";
    const { type, msg } =
      expected === "union"
        ? { type: "value_error", msg: `Value error, ${issue.message}` }
        : wrongTypeItem(expected, input);
    return { type, loc, msg, input };
  });
}

/** Outcome of reading and validating a FastAPI body parameter. */
export type BodyResult<T> = { ok: true; value: T; raw: unknown } | { ok: false; response: Response };

/**
 * Reads the body as FastAPI does for a pydantic body parameter (JSON when the content type is JSON or absent;
 * CPython's JSON parser) and validates it with `schema` (unknown fields ignored, as pydantic does).
 * @returns the parsed value, or the 422 response FastAPI would send.
 */
export async function readBody<S extends z.core.$ZodType>(req: Request, schema: S): Promise<BodyResult<z.output<S>>> {
  const text = await req.text();
  if (text.length === 0) {
    return { ok: false, response: validationError([{ type: "missing", loc: ["body"], msg: "Field required", input: null }]) };
  }
  let body: unknown = text;
  const contentType = req.headers.get("content-type");
  if (!contentType || /^application\/([\w.+-]*\+)?json\b/i.test(contentType)) {
    try {
      body = pyJsonLoads(text);
    } catch (e) {
      if (!(e instanceof PyJsonDecodeError)) throw e;
      const item = { type: "json_invalid", loc: ["body", e.pos], msg: "JSON decode error", input: {}, ctx: { error: e.msg } };
      return { ok: false, response: validationError([item]) };
    }
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    const item = { type: "model_attributes_type", loc: ["body"], msg: "Input should be a valid dictionary or object to extract fields from", input: body };
    return { ok: false, response: validationError([item]) };
  }
  const parsed = z.safeParse(schema, body);
  if (!parsed.success) return { ok: false, response: validationError(zodIssuesToFastApi(parsed.error.issues, body)) };
  return { ok: true, value: parsed.data, raw: body };
}
