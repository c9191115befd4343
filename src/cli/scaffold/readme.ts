/**
 * @module cli/scaffold/readme — adds a `### NAME` subsection for a new function under the README's
 * `## Rollout functions` heading: at the end of that section when it exists, else in a new section at the end
 * of the file (or a new README holding only that section). Fenced code blocks are skipped when looking for
 * headings. Pure text in, text out.
 */

/** The README heading the function sections live under. */
export const ROLLOUT_FUNCTIONS_HEADING = "## Rollout functions";

/** What {@link addReadmeSection} did. */
export interface ReadmeEdit {
  text: string;
  /**
   * `created`: there was no README; `appended`: a new `## Rollout functions` section at the end; `inserted`: under
   * the existing one; `unchanged`: a `### NAME` heading was already there
   */
  change: "created" | "appended" | "inserted" | "unchanged";
}

/** Indexes of lines that are markdown headings (`#`…), outside fenced code blocks. */
function headingLines(lines: readonly string[]): number[] {
  const out: number[] = [];
  let fence: string | null = null;
  lines.forEach((line, i) => {
    const f = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (f && (fence === null || f[0] === fence[0])) fence = fence === null ? f : null;
    else if (fence === null && /^#{1,6}\s/.test(line)) out.push(i);
  });
  return out;
}

const level = (line: string) => /^#+/.exec(line)?.[0].length ?? 0;

/**
 * Adds `section` (markdown starting with `### NAME`) for `name` to `readme` (`null` when there is no README).
 * Idempotent: a README that already has a `### NAME` heading under the section is returned unchanged.
 */
export function addReadmeSection(readme: string | null, name: string, section: string): ReadmeEdit {
  const body = section.trim();
  if (readme === null || readme.trim() === "") return { text: `${ROLLOUT_FUNCTIONS_HEADING}\n\n${body}\n`, change: "created" };
  const lines = readme.replace(/\s+$/, "").split("\n");
  const headings = headingLines(lines);
  const sectionAt = headings.find((i) => lines[i]!.trim().toLowerCase() === ROLLOUT_FUNCTIONS_HEADING.toLowerCase());
  if (sectionAt === undefined) {
    return { text: `${lines.join("\n")}\n\n${ROLLOUT_FUNCTIONS_HEADING}\n\n${body}\n`, change: "appended" };
  }
  const end = headings.find((i) => i > sectionAt && level(lines[i]!) <= 2) ?? lines.length;
  const own = new RegExp(`^###\\s+\`?${name.replace(/-/g, "\\-")}\`?\\s*$`);
  if (headings.some((i) => i > sectionAt && i < end && own.test(lines[i]!.trim()))) return { text: readme, change: "unchanged" };
  let insertAt = end;
  while (insertAt > sectionAt + 1 && lines[insertAt - 1]!.trim() === "") insertAt--;
  const after = lines.slice(end);
  const text = [...lines.slice(0, insertAt), "", body, ...(after.length ? ["", ...after] : [])].join("\n");
  return { text: `${text}\n`, change: "inserted" };
}
