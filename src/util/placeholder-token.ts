/**
 * @module util/placeholder-token — recognises a token that is an example left in place rather than a secret: the
 * value `.dev.vars.example` ships (`replace-with-a-long-random-token`) and the usual stand-ins (`changeme`,
 * `your-token-here`, `<token>`, `xxxxxxxx…`, one character repeated). Such a token is refused where it is set
 * (the Worker answers 503) and where it is sent (the CLI), with one line that says how to make a real one. No
 * imports: shared by the Worker and the CLI.
 */

/** The placeholder `.dev.vars.example` carries for `AJET_API_TOKEN`. */
export const EXAMPLE_API_TOKEN = "replace-with-a-long-random-token";

/** Words that mark a stand-in, compared on the token lower-cased with `_`, `-`, `.`, and spaces removed. */
const PLACEHOLDER_WORDS = ["replacewith", "changeme", "yourtoken", "yourapitoken", "yoursecret", "placeholder", "putyour", "inserttoken", "tokenhere", "secrethere", "todo", "fixme", "example"];

/**
 * Why `token` looks like a placeholder rather than a secret, or null when it does not. The reason names the pattern,
 * never the value, so a real token wrongly matched is not echoed.
 */
export function placeholderTokenReason(token: string): string | null {
  const t = token.trim();
  if (t === "") return null;
  const squashed = t.toLowerCase().replace(/[\s_.-]/g, "");
  if (t === EXAMPLE_API_TOKEN || squashed.startsWith("replacewith")) return "it is the placeholder of .dev.vars.example";
  if (/^<.*>$/.test(t) || /^\$\{?[A-Z_]+\}?$/.test(t)) return "it is a placeholder in angle brackets or an unexpanded variable";
  if (/^(.)\1{3,}$/.test(squashed) || /^(x+|\*+|\.+|…+)$/i.test(t) || t.includes("…") || t.includes("...")) return "it is a run of one character or an ellipsis";
  const word = PLACEHOLDER_WORDS.find((w) => squashed.includes(w));
  return word ? `it contains "${word}", a placeholder word` : null;
}
