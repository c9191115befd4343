/**
 * @module functions/academic-translation — two models in one episode (issue 4 §4, the seed's Demo 2): model A on
 * swarm `translator` drafts a rough translation of `metadata.abstract`, model B on swarm `detector` lists the proper
 * nouns and terms with their correct renderings, and model A writes the final translation. One judged reward per
 * model: A for the final translation, B for the term list. The judge is an OpenAI-compatible endpoint from the
 * run's secrets (`JUDGE_BASE_URL`, `JUDGE_API_KEY`, `JUDGE_MODEL`); without them a DEMO FALLBACK scores by text
 * overlap (`src/rewards/judge-fallback.ts`), which is not a judge and must not train a real model.
 */
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import {
  charBigramF1,
  type ChatIo,
  completeChat,
  defineRolloutFunction,
  EpisodeAbortError,
  HAN_SCRIPT,
  type Judge,
  JUDGE_SCORE_INSTRUCTION,
  type JudgeFetch,
  judgeFromSecrets,
  messageText,
  type OpenAIJudgeOptions,
  type RolloutContext,
  type RolloutFunction,
  type RolloutOutput,
  scriptShare,
  stripReasoning,
  type Task,
  termListScore,
  type TermPair,
  termsFoundInSource,
} from "ajet-edge";

/** Swarm names: `translator` serves model A (calls 1 and 3), `detector` model B (call 2). Order = claim order. */
export const TRANSLATION_SWARMS = ["translator", "detector"] as const;

/** System prompt of model A on every request (BC-44). */
export const TRANSLATOR_SYSTEM_PROMPT =
  "You are a professional translator of academic papers. You translate faithfully, keep the academic register, " +
  "and render proper nouns and technical terms the way the field conventionally writes them.";

/** System prompt of model B on every request (BC-44). */
export const DETECTOR_SYSTEM_PROMPT =
  "You are a terminology reviewer for academic translations. You find the proper nouns and technical terms of a " +
  "source text (people, places, organisations, models, datasets, methods) and give their correct rendering.";

/** First line of the detector's request; the emulator answer key matches on it (see {@link demoAnswerKey}). */
export const DETECTOR_INSTRUCTION =
  "List the proper nouns and technical terms of the source below that are hard to translate or wrong in the " +
  "rough translation.";

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

function termPairs(value: unknown): TermPair[] | undefined {
  if (Array.isArray(value)) {
    return value.flatMap((v): TermPair[] => {
      if (typeof v === "string") return [{ term: v }];
      if (v && typeof v === "object" && typeof (v as TermPair).term === "string") {
        const { term, rendering } = v as TermPair;
        return [typeof rendering === "string" ? { term, rendering } : { term }];
      }
      return [];
    });
  }
  if (value && typeof value === "object") {
    return Object.entries(value).map(([term, r]) => (typeof r === "string" ? { term, rendering: r } : { term }));
  }
  return undefined;
}

/**
 * Reads the task: `metadata.abstract` (else `main_query`), optional `metadata.reference` (string),
 * `metadata.proper_nouns` (`[{term, rendering}]`, `["term"]` or `{term: rendering}`), `metadata.source_language`
 * (default English) and `metadata.target_language` (default Simplified Chinese).
 * @throws EpisodeAbortError `invalid_task` when there is no abstract — a data error, never scored
 */
export function translationTask(task: Task): TranslationTask {
  const m = task.metadata;
  const text = (v: unknown) => (typeof v === "string" && v.trim() !== "" ? v.trim() : undefined);
  const abstract = text(m.abstract) ?? text(task.main_query);
  if (!abstract) {
    const id = JSON.stringify(task.task_id);
    throw new EpisodeAbortError("invalid_task", `task ${id} has no metadata.abstract (a non-empty string)`);
  }
  const reference = text(m.reference);
  const properNouns = termPairs(m.proper_nouns);
  return {
    abstract,
    ...(reference ? { reference } : {}),
    ...(properNouns?.length ? { properNouns } : {}),
    sourceLanguage: text(m.source_language) ?? "English",
    targetLanguage: text(m.target_language) ?? "Simplified Chinese",
  };
}

/** The content of the last closed `<tag>…</tag>` among `tags`, or `null`. */
function lastTagged(text: string, tags: readonly string[]): string | null {
  let best: { at: number; body: string } | null = null;
  for (const tag of tags) {
    const open = text.lastIndexOf(`<${tag}>`);
    const close = open < 0 ? -1 : text.indexOf(`</${tag}>`, open);
    if (close >= 0 && (!best || open > best.at)) best = { at: open, body: text.slice(open + tag.length + 2, close) };
  }
  return best ? best.body.trim() : null;
}

/** A reply's payload: `<think>` removed, then the last `<translation>`/`<terms>`/`<answer>` block, else all of it. */
export function replyPayload(content: unknown): string {
  const text = stripReasoning(messageText(content));
  return lastTagged(text, ["translation", "terms", "answer"]) ?? text.trim();
}

/** Parses the detector's list: one `term => rendering` per line (`->`, `→`, `:` also); bullets, numbers stripped. */
export function parseTermList(payload: string): TermPair[] {
  const out: TermPair[] = [];
  for (const raw of payload.split(/\r?\n/)) {
    const line = raw.replace(/^\s*(?:[-*•]|\d+[.)])\s*/u, "").trim();
    if (line === "" || /^none\.?$/i.test(line)) continue;
    const sep = /\s*(?:=>|->|→|：|:)\s*/u.exec(line);
    const term = (sep ? line.slice(0, sep.index) : line).replace(/^["'`]|["'`]$/g, "").trim();
    const rendering = sep ? line.slice(sep.index + sep[0].length).trim() : "";
    if (term !== "") out.push(rendering !== "" ? { term, rendering } : { term });
  }
  return out;
}

/** Renders terms one per line as `term => rendering` (the format the detector is asked for). */
export function formatTermList(terms: readonly TermPair[]): string {
  return terms.map((t) => (t.rendering ? `${t.term} => ${t.rendering}` : t.term)).join("\n");
}

/** Model A's first request: the abstract to translate. */
export function roughTranslationRequest(t: TranslationTask): string {
  return (
    `Translate the following ${t.sourceLanguage} academic abstract into ${t.targetLanguage}. ` +
    `Reply with the translation only, inside <translation></translation> tags.\n\n${t.abstract}`
  );
}

/** The start of model B's request: {@link DETECTOR_INSTRUCTION} and the source (the emulator answer key's match). */
export function detectorRequestHead(abstract: string, sourceLanguage: string): string {
  return `${DETECTOR_INSTRUCTION}\n\nSource (${sourceLanguage}):\n${abstract}`;
}

/** Model B's request: {@link detectorRequestHead}, the rough translation, the list format. */
export function detectorRequest(t: TranslationTask, rough: string): string {
  return (
    `${detectorRequestHead(t.abstract, t.sourceLanguage)}\n\nRough translation (${t.targetLanguage}):\n${rough}\n\n` +
    `Write one term per line as "source term => correct ${t.targetLanguage} rendering", inside <terms></terms> ` +
    "tags. Write <terms>none</terms> if there is nothing to list."
  );
}

/** Model A's second request, in the same conversation: the detector's terms, then the final translation. */
export function finalTranslationRequest(terms: readonly TermPair[]): string {
  const head = terms.length
    ? `A terminology reviewer suggests these renderings:\n${formatTermList(terms)}\n\nRevise your translation.`
    : "A terminology reviewer found no terms to correct. Check your translation once more.";
  return `${head} Reply with the final translation only, inside <translation></translation> tags.`;
}

/** Rubric of the judge call that gives model A's reward. */
export const TRANSLATION_RUBRIC =
  "You grade translations of academic abstracts. Judge faithfulness (nothing omitted, added or distorted), the " +
  "rendering of proper nouns and technical terms, and fluent academic register in the target language. A reference " +
  "translation, when given, is one acceptable translation, not the only one. Think in at most five sentences.\n" +
  JUDGE_SCORE_INSTRUCTION;

/** Rubric of the judge call that gives model B's reward. */
export const TERMS_RUBRIC =
  "You grade a terminology reviewer. Given a source abstract and a rough translation, the reviewer listed proper " +
  "nouns and technical terms with their correct renderings. Reward lists that cover the terms that matter, give " +
  "correct conventional renderings and invent nothing absent from the source. A reference list, when given, shows " +
  "the expected terms. Think in at most five sentences.\n" +
  JUDGE_SCORE_INSTRUCTION;

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
export function fallbackScores(
  t: TranslationTask,
  run: TranslationTranscript,
): { translation: GradedScore; terms: GradedScore } {
  const chinese = /chinese|中文|汉语/i.test(t.targetLanguage);
  const translation: GradedScore = t.reference
    ? { score: charBigramF1(run.final, t.reference), source: "fallback:char-bigram-f1", attempts: 0 }
    : { score: chinese ? scriptShare(run.final, HAN_SCRIPT) : 0, source: "fallback:han-share", attempts: 0 };
  const terms: GradedScore = t.properNouns
    ? { score: termListScore(run.terms, t.properNouns), source: "fallback:term-list", attempts: 0 }
    : { score: termsFoundInSource(run.terms, t.abstract), source: "fallback:terms-in-source", attempts: 0 };
  return { translation, terms };
}

/** Grades both models with the judge, in parallel (two verdicts count once in the idle budget, BC-23). */
export async function judgeScores(
  judge: Judge,
  t: TranslationTask,
  run: TranslationTranscript,
  signal?: AbortSignal,
): Promise<{ translation: GradedScore; terms: GradedScore }> {
  const source = `Source (${t.sourceLanguage}):\n${t.abstract}\n\n`;
  const reference = t.reference ? `Reference translation:\n${t.reference}\n\n` : "";
  const referenceTerms = t.properNouns ? `Reference terms:\n${formatTermList(t.properNouns)}\n\n` : "";
  const listed = formatTermList(run.terms) || "(empty)";
  const [translation, terms] = await Promise.all([
    judge.grade(
      {
        label: "translation",
        rubric: TRANSLATION_RUBRIC,
        input: `${source}${reference}Candidate translation (${t.targetLanguage}):\n${run.final}`,
      },
      { signal },
    ),
    judge.grade(
      {
        label: "terms",
        rubric: TERMS_RUBRIC,
        input: `${source}Rough translation:\n${run.rough}\n\n${referenceTerms}Reviewer's list:\n${listed}`,
      },
      { signal },
    ),
  ]);
  const graded = (v: { score: number; attempts: number }): GradedScore => ({
    score: v.score,
    source: `judge:${judge.name}`,
    attempts: v.attempts,
  });
  return { translation: graded(translation), terms: graded(terms) };
}

/** Runs the three calls: A (rough), B (terms), A (final, continuing A's conversation). */
export async function runTranslationAgents(t: TranslationTask, a: ChatIo, b: ChatIo): Promise<TranslationTranscript> {
  const conversation: ChatCompletionMessageParam[] = [
    { role: "system", content: TRANSLATOR_SYSTEM_PROMPT },
    { role: "user", content: roughTranslationRequest(t) },
  ];
  const first = await completeChat(a, { messages: conversation });
  const rough = replyPayload(first.message.content);
  const second = await completeChat(b, {
    messages: [
      { role: "system", content: DETECTOR_SYSTEM_PROMPT },
      { role: "user", content: detectorRequest(t, rough) },
    ],
  });
  const terms = parseTermList(replyPayload(second.message.content));
  conversation.push(
    { role: "assistant", content: first.message.content ?? "" },
    { role: "user", content: finalTranslationRequest(terms) },
  );
  const third = await completeChat(a, { messages: conversation });
  return {
    rough,
    terms,
    final: replyPayload(third.message.content),
    finishReasons: [first.finishReason, second.finishReason, third.finishReason],
  };
}

/** Options of {@link createAcademicTranslation}. */
export interface AcademicTranslationOptions {
  /** the judge to use; default: `judgeFromSecrets(ctx.secrets, judgeOptions)`; `undefined` → the demo fallback */
  judge?: (ctx: RolloutContext) => Judge | undefined;
  /** options of the secrets-configured judge (retries, timeouts, a fetch) */
  judgeOptions?: Omit<OpenAIJudgeOptions, "baseUrl" | "apiKey" | "model">;
}

/** Builds the function; the default export is `createAcademicTranslation()`. */
export function createAcademicTranslation(options: AcademicTranslationOptions = {}): RolloutFunction {
  return defineRolloutFunction({
    name: "academic-translation",
    swarms: TRANSLATION_SWARMS,
    description: "Two models: rough translation (translator), term detection (detector), final translation; judged",
    // `ajet-edge dev --function academic-translation` runs on these without --dataset (both emulators get the key)
    demo: { kind: "generic", rows: demoTaskRows, answerKey: demoAnswerKey() },
    async run(task, ctx) {
      const t = translationTask(task);
      const io = (swarm: string): ChatIo => {
        const llm = ctx.openai[swarm];
        if (!llm) throw new EpisodeAbortError("no_episode", `no claimed episode on swarm '${swarm}'`);
        return { llm, model: ctx.model, signal: ctx.signal };
      };
      const run = await runTranslationAgents(t, io("translator"), io("detector"));
      // the judge's calls share the invocation's connections and subrequest budget (BC-48, BC-49)
      const fetch: JudgeFetch = options.judgeOptions?.fetch ?? ((input, init) => ctx.fetch(input, init));
      const judge = options.judge ? options.judge(ctx) : judgeFromSecrets(ctx.secrets, { ...options.judgeOptions, fetch });
      if (!judge) ctx.log.info("no judge secrets: demo fallback scores (text overlap), not a judge");
      const scores = judge ? await judgeScores(judge, t, run, ctx.signal) : fallbackScores(t, run);
      const shared = {
        rough_translation: run.rough,
        terms: run.terms,
        final_translation: run.final,
        finish_reasons: run.finishReasons,
      };
      const output = (model: string, graded: GradedScore): RolloutOutput => ({
        reward: graded.score,
        metadata: { ...shared, model, score_source: graded.source },
        log_metrics: { judge_attempts: graded.attempts },
      });
      return { translator: output("A", scores.translation), detector: output("B", scores.terms) };
    },
  });
}

/** One demo abstract (written for this project) with its reference translation and reference terms. */
export interface DemoAbstract {
  abstract: string;
  reference: string;
  properNouns: TermPair[];
}

/** [abstract, reference, terms as `term => rendering` lines] — compact source of {@link ACADEMIC_DEMO_ROWS}. */
const DEMO: ReadonlyArray<readonly [string, string, string]> = [
  [
    "We introduce Lumen, a sparse mixture-of-experts language model trained on the Common Crawl corpus. On the " +
      "GSM8K benchmark, Lumen matches a dense baseline while activating only a quarter of its parameters. " +
      "Training ran on Tensor Processing Units at the Zurich Data Center.",
    "我们提出了 Lumen，一个在 Common Crawl 语料上训练的稀疏混合专家语言模型。在 GSM8K 基准上，" +
      "Lumen 仅激活四分之一的参数即可达到稠密基线的水平。训练在苏黎世数据中心的张量处理单元上完成。",
    "Lumen => Lumen\nmixture-of-experts => 混合专家\nCommon Crawl => Common Crawl\nGSM8K => GSM8K\n" +
      "Tensor Processing Units => 张量处理单元\nZurich Data Center => 苏黎世数据中心",
  ],
  [
    "This paper studies coral bleaching on the Great Barrier Reef between 2016 and 2022. Using satellite data " +
      "from the Sentinel-2 mission, we map heat stress events and relate them to the El Niño–Southern " +
      "Oscillation. Our results suggest that recovery time has halved since the 1990s.",
    "本文研究了 2016 年至 2022 年间大堡礁的珊瑚白化现象。我们利用哨兵二号任务的卫星数据绘制热应力事件，" +
      "并将其与厄尔尼诺-南方涛动联系起来。结果表明，自 20 世纪 90 年代以来，恢复时间缩短了一半。",
    "coral bleaching => 珊瑚白化\nGreat Barrier Reef => 大堡礁\nSentinel-2 => 哨兵二号\nheat stress => 热应力\n" +
      "El Niño–Southern Oscillation => 厄尔尼诺-南方涛动",
  ],
  [
    "We revisit the Byzantine Generals Problem in asynchronous networks and propose Quorum Relay, a consensus " +
      "protocol that tolerates up to one third faulty nodes. A prototype built on the Raft library of etcd " +
      "commits transactions within two network round trips.",
    "我们重新审视异步网络中的拜占庭将军问题，并提出 Quorum Relay，一种可容忍至多三分之一故障节点的共识协议。" +
      "基于 etcd 的 Raft 库构建的原型可在两个网络往返内提交事务。",
    "Byzantine Generals Problem => 拜占庭将军问题\nQuorum Relay => Quorum Relay\nconsensus protocol => 共识协议\n" +
      "Raft => Raft\netcd => etcd",
  ],
  [
    "Drawing on archives of the Royal Society and the letters of Ada Lovelace, we trace how the Analytical " +
      "Engine was discussed in Victorian scientific circles. We argue that Charles Babbage's public " +
      "demonstrations shaped the early reception of programmable machines.",
    "基于英国皇家学会的档案和阿达·洛夫莱斯的信件，我们追溯了分析机在维多利亚时代科学界中的讨论情况。" +
      "我们认为，查尔斯·巴贝奇的公开演示塑造了可编程机器早期的接受过程。",
    "Royal Society => 英国皇家学会\nAda Lovelace => 阿达·洛夫莱斯\nAnalytical Engine => 分析机\n" +
      "Victorian => 维多利亚时代\nCharles Babbage => 查尔斯·巴贝奇",
  ],
];

/** Four short English abstracts with Simplified Chinese references and terms, for `ajet-edge dev` and tests. */
export const ACADEMIC_DEMO_ROWS: readonly DemoAbstract[] = DEMO.map(([abstract, reference, terms]) => ({
  abstract,
  reference,
  properNouns: parseTermList(terms),
}));

/**
 * Demo dataset rows (generic kind: `main_query` + `metadata`), to use as
 * `datasets: [{ name: "academic-demo", kind: "generic", tasks: demoTaskRows }]`.
 */
export const demoTaskRows: ReadonlyArray<{ main_query: string; metadata: Record<string, unknown> }> =
  ACADEMIC_DEMO_ROWS.map((r) => ({
    main_query: r.abstract,
    metadata: { abstract: r.abstract, reference: r.reference, proper_nouns: r.properNouns },
  }));

/** The demo rows as tasks with ids `academic-demo:train:<i>` (what the loader would give them). */
export const demoTasks: readonly Task[] = demoTaskRows.map((r, i) => ({
  task_id: `academic-demo:train:${i}`,
  main_query: r.main_query,
  init_messages: [],
  env_type: "no_env",
  metadata: r.metadata,
}));

/**
 * An answer key for the local emulator (`{match, answer, format}` rows, `--answer-key` JSONL): the abstract answers
 * with the reference translation (calls 1 and 3), the detector's request with the reference terms (call 2), so a
 * "correct" simulated reply scores 1 under the fallback and a wrong one about 0 — a reward curve to watch in dev.
 */
export function demoAnswerKey(): Array<{ match: string; answer: string; format: "answer-tag" }> {
  return ACADEMIC_DEMO_ROWS.flatMap((r) => [
    { match: r.abstract, answer: r.reference, format: "answer-tag" as const },
    {
      match: detectorRequestHead(r.abstract, "English"),
      answer: formatTermList(r.properNouns),
      format: "answer-tag" as const,
    },
  ]);
}

export default createAcademicTranslation();
