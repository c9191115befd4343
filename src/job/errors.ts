/** @module job/errors — the one error type of `src/job`: a job that the engine would refuse (spec §10.3). */

/** Why a job was refused. `not_implemented` mirrors the Python job's NotImplementedError (trinity backbone). */
export type AgentJetJobErrorCode =
  | "invalid_option"
  | "invalid_yaml"
  | "length_options"
  | "token_length"
  | "lora"
  | "not_implemented";

/**
 * Thrown at construction when options or the merged YAML break a rule of spec §10.3. The message names the option
 * (camelCase) and/or the YAML key (snake_case) and says how to fix it; `option` and `yamlPath` carry the same.
 */
export class AgentJetJobConfigError extends Error {
  readonly code: AgentJetJobErrorCode;
  readonly option: string | undefined;
  readonly yamlPath: string | undefined;

  constructor(message: string, details: { code: AgentJetJobErrorCode; option?: string; yamlPath?: string }) {
    super(message);
    this.name = "AgentJetJobConfigError";
    this.code = details.code;
    this.option = details.option;
    this.yamlPath = details.yamlPath;
  }
}
