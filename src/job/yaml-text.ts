/**
 * @module job/yaml-text — reading and writing the job YAML the way the Python side (PyYAML, YAML 1.1) reads it:
 * comments and unknown keys survive, and floats are written so that `yaml.safe_load` still sees floats.
 */
import { Document, isMap, isScalar, parseDocument } from "yaml";
import type { ScalarTag, Tags } from "yaml";
import { AgentJetJobConfigError } from "./errors.ts";

/**
 * Python's `repr()` of a float, which is what the Python job prints in its messages: `1e-06`, `0.5`, `2.0`,
 * `-0.0`. Exponent form below 1e-4 and from 1e16 up, like CPython; integers get a `.0`.
 */
export function pythonFloatRepr(x: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "nan" : x > 0 ? "inf" : "-inf";
  if (Object.is(x, -0)) return "-0.0";
  const abs = Math.abs(x);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e16)) {
    const [mantissa = "", exponent = "0"] = x.toExponential().split("e");
    const sign = exponent.startsWith("-") ? "-" : "+";
    return `${mantissa}e${sign}${exponent.replace(/^[+-]/, "").padStart(2, "0")}`;
  }
  return Number.isInteger(x) ? `${x}.0` : String(x);
}

/**
 * A float as PyYAML writes it (`represent_float`): Python's repr with `.0` forced into an exponent mantissa, so
 * `1e-7` becomes `1.0e-07`. PyYAML's YAML 1.1 resolver reads a bare `1e-7` as a STRING; this form stays a float.
 */
export function pyyamlFloat(x: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? ".nan" : x > 0 ? ".inf" : "-.inf";
  if (Number.isInteger(x)) return String(x);
  const repr = pythonFloatRepr(x);
  return repr.includes("e") && !repr.split("e")[0]!.includes(".") ? repr.replace("e", ".0e") : repr;
}

/** Swaps the float tags' writer for {@link pyyamlFloat}; reading is unchanged. */
function withPyyamlFloats(tags: Tags): Tags {
  return tags.map((tag) => {
    if (typeof tag === "string" || tag.tag !== "tag:yaml.org,2002:float") return tag;
    if (!("stringify" in tag) || tag.format === "TIME") return tag;
    const scalarTag = tag as ScalarTag;
    const original = scalarTag.stringify;
    return {
      ...scalarTag,
      stringify: (item, ctx, onComment, onChompKeep) =>
        typeof item.value === "number" && (scalarTag.format === undefined || scalarTag.format === "EXP")
          ? pyyamlFloat(item.value)
          : (original?.(item, ctx, onComment, onChompKeep) ?? String(item.value)),
    } satisfies ScalarTag;
  });
}

/** Options shared by every parse and write: YAML 1.1 like PyYAML (so `yes`/`on` stay quoted strings on output). */
const YAML_OPTIONS = { version: "1.1", customTags: withPyyamlFloats } as const;

/**
 * Parses a job YAML into a document whose top level is a mapping.
 * @param where names the text in errors, e.g. `baseYaml`.
 * @throws AgentJetJobConfigError (code `invalid_yaml`) with the parser's line and column, or when the top level
 *   is not a mapping.
 */
export function parseJobYaml(text: string, where: string): Document {
  const doc = parseDocument(text, { ...YAML_OPTIONS, prettyErrors: true, uniqueKeys: true });
  const first = doc.errors[0];
  if (first) {
    throw new AgentJetJobConfigError(`${where} is not valid YAML: ${first.message}`, { code: "invalid_yaml" });
  }
  if (doc.contents !== null && !isMap(doc.contents)) {
    throw new AgentJetJobConfigError(`${where} must be a YAML mapping with a top-level \`ajet:\` key`, {
      code: "invalid_yaml",
    });
  }
  return doc.contents === null ? new Document({}, YAML_OPTIONS) : doc;
}

/**
 * Sets one dotted key (`ajet.rollout.num_repeat`) in place, creating missing mappings; comments elsewhere stay.
 * @throws AgentJetJobConfigError (code `invalid_yaml`) when a parent on the path is a scalar or a list.
 */
export function setYamlPath(doc: Document, dottedPath: string, value: unknown): void {
  const keys = dottedPath.split(".");
  for (let i = 1; i < keys.length; i++) {
    const parent = doc.getIn(keys.slice(0, i), true);
    if (parent !== undefined && !isMap(parent) && !(isScalar(parent) && parent.value === null)) {
      throw new AgentJetJobConfigError(
        `cannot set \`${dottedPath}\`: \`${keys.slice(0, i).join(".")}\` in the YAML is not a mapping`,
        { code: "invalid_yaml", yamlPath: dottedPath },
      );
    }
    // Create missing parents ourselves: the library's auto-created parents are `!!omap` under YAML 1.1.
    if (parent === undefined || isScalar(parent)) doc.setIn(keys.slice(0, i), doc.createNode({}));
  }
  const existing = doc.getIn(keys, true);
  if (isScalar(existing) && (value === null || typeof value !== "object")) {
    // Keep the node (and its comment); forget its old style so the new value is written in its own form.
    existing.value = value;
    existing.type = undefined;
    existing.format = undefined;
    existing.tag = undefined;
    return;
  }
  doc.setIn(keys, doc.createNode(value));
}

/** Reads one dotted key from a plain object tree (`undefined` when any part is missing). */
export function getPath(tree: unknown, dottedPath: string): unknown {
  let node: unknown = tree;
  for (const key of dottedPath.split(".")) {
    if (node === null || typeof node !== "object" || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/** Writes the document as YAML text (block style, PyYAML-compatible floats, 2-space indent). */
export function stringifyJobYaml(doc: Document): string {
  return doc.toString({ lineWidth: 0 });
}
