import {
  type ChatIo,
  type Judge,
  type OpenAIJudgeOptions,
  type RolloutContext,
  type RolloutFunction,
  type Task,
  type TermPair,
} from "ajet-edge";
/** Swarm names: `translator` serves model A (calls 1 and 3), `detector` model B (call 2). Order = claim order. */
export declare const TRANSLATION_SWARMS: readonly ["translator", "detector"];
/** System prompt of model A on every request (BC-44). */
export declare const TRANSLATOR_SYSTEM_PROMPT: string;
/** System prompt of model B on every request (BC-44). */
export declare const DETECTOR_SYSTEM_PROMPT: string;
/** First line of the detector's request; the emulator answer key matches on it (see {@link demoAnswerKey}). */
export declare const DETECTOR_INSTRUCTION: string;
/** A translation task read from `task.metadata` (`main_query` stands in for a missing `abstract`). */
export interface TranslationTask {
    abstract: string;
    /** a reference translation, if the dataset has one */
    reference?: string;
    /** reference terms with their renderings, if the dataset has them (`proper_nouns`) */
    properNouns?: TermPair[];
    sourceLanguage: string;
    targetLanguage: string;
}
/**
 * Reads the task: `metadata.abstract` (else `main_query`), optional `metadata.reference` (string),
 * `metadata.proper_nouns` (`[{term, rendering}]`, `["term"]` or `{term: rendering}`), `metadata.source_language`
 * (default English) and `metadata.target_language` (default Simplified Chinese).
 * @throws EpisodeAbortError `invalid_task` when there is no abstract — a data error, never scored
 */
export declare function translationTask(task: Task): TranslationTask;
/** A reply's payload: `<think>` removed, then the last `<translation>`/`<terms>`/`<answer>` block, else all of it. */
export declare function replyPayload(content: unknown): string;
/** Parses the detector's list: one `term => rendering` per line (`->`, `→`, `:` also); bullets, numbers stripped. */
export declare function parseTermList(payload: string): TermPair[];
/** Renders terms one per line as `term => rendering` (the format the detector is asked for). */
export declare function formatTermList(terms: readonly TermPair[]): string;
/** Model A's first request: the abstract to translate. */
export declare function roughTranslationRequest(t: TranslationTask): string;
/** The start of model B's request: {@link DETECTOR_INSTRUCTION} and the source (the emulator answer key's match). */
export declare function detectorRequestHead(abstract: string, sourceLanguage: string): string;
/** Model B's request: {@link detectorRequestHead}, the rough translation, the list format. */
export declare function detectorRequest(t: TranslationTask, rough: string): string;
/** Model A's second request, in the same conversation: the detector's terms, then the final translation. */
export declare function finalTranslationRequest(terms: readonly TermPair[]): string;
/** Rubric of the judge call that gives model A's reward. */
export declare const TRANSLATION_RUBRIC: string;
/** Rubric of the judge call that gives model B's reward. */
export declare const TERMS_RUBRIC: string;
/** What the three calls produced. */
export interface TranslationTranscript {
    rough: string;
    terms: TermPair[];
    final: string;
    finishReasons: string[];
}
/** One reward and where it came from (`judge:<model>` or `fallback:<rule>`). */
export interface GradedScore {
    score: number;
    source: string;
    attempts: number;
}
/**
 * The demo fallback (no judge secrets): A gets character-bigram F1 of the final translation against the reference
 * (without one: the share of Han letters for a Chinese target, else 0); B gets the term-list score against
 * `proper_nouns` (without them: the share of its terms found in the source). Text overlap, not a judge.
 */
export declare function fallbackScores(t: TranslationTask, run: TranslationTranscript): {
    translation: GradedScore;
    terms: GradedScore;
};
/** Grades both models with the judge, in parallel (two verdicts count once in the idle budget, BC-23). */
export declare function judgeScores(judge: Judge, t: TranslationTask, run: TranslationTranscript, signal?: AbortSignal): Promise<{
    translation: GradedScore;
    terms: GradedScore;
}>;
/** Runs the three calls: A (rough), B (terms), A (final, continuing A's conversation). */
export declare function runTranslationAgents(t: TranslationTask, a: ChatIo, b: ChatIo): Promise<TranslationTranscript>;
/** Options of {@link createAcademicTranslation}. */
export interface AcademicTranslationOptions {
    /** the judge to use; default: `judgeFromSecrets(ctx.secrets, judgeOptions)`; `undefined` → the demo fallback */
    judge?: (ctx: RolloutContext) => Judge | undefined;
    /** options of the secrets-configured judge (retries, timeouts, a fetch) */
    judgeOptions?: Omit<OpenAIJudgeOptions, "baseUrl" | "apiKey" | "model">;
}
/** Builds the function; the default export is `createAcademicTranslation()`. */
export declare function createAcademicTranslation(options?: AcademicTranslationOptions): RolloutFunction;
/** One demo abstract (written for this project) with its reference translation and reference terms. */
export interface DemoAbstract {
    abstract: string;
    reference: string;
    properNouns: TermPair[];
}
/** Four short English abstracts with Simplified Chinese references and terms, for `ajet-edge dev` and tests. */
export declare const ACADEMIC_DEMO_ROWS: readonly DemoAbstract[];
/**
 * Demo dataset rows (generic kind: `main_query` + `metadata`), to use as
 * `datasets: [{ name: "academic-demo", kind: "generic", tasks: demoTaskRows }]`.
 */
export declare const demoTaskRows: ReadonlyArray<{
    main_query: string;
    metadata: Record<string, unknown>;
}>;
/** The demo rows as tasks with ids `academic-demo:train:<i>` (what the loader would give them). */
export declare const demoTasks: readonly Task[];
/**
 * An answer key for the local emulator (`{match, answer, format}` rows, `--answer-key` JSONL): the abstract answers
 * with the reference translation (calls 1 and 3), the detector's request with the reference terms (call 2), so a
 * "correct" simulated reply scores 1 under the fallback and a wrong one about 0 — a reward curve to watch in dev.
 */
export declare function demoAnswerKey(): Array<{
    match: string;
    answer: string;
    format: "answer-tag";
}>;
declare const _default: RolloutFunction;
export default _default;
