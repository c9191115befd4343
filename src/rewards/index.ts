/** @module rewards — pure reward code: math answers (boxed, GSM8K, units, prose), Countdown, and the shared arithmetic parser. */
export * from "../util/arithmetic.ts";
export * from "./boxed.ts";
export * from "./countdown.ts";
export * from "./final-message.ts";
export * from "./final-number.ts";
export * from "./gsm8k.ts";
export * from "./math.ts";
export * from "./normalize.ts";
export * from "./rational.ts";
export * from "./units.ts";
