/**
 * @module test/unit/rewards/units — BC-13's kind: a right value followed by a unit scores as the value, whatever the
 * value (integer, decimal, fraction, scientific notation) and however the unit is written (`\text{…}`, `\mbox{…}`,
 * `\mathrm{…}`, an exponent, a rate with "per", plain words, glued abbreviations); never rescaled, and a word that
 * relates the value to another one is never taken for a unit.
 */
import { describe, expect, it } from "vitest";
import { isUnitPhrase, normalizeAnswer, scoreMathAnswer, stripLatexUnits, stripPlainUnits } from "../../../src/rewards/index.ts";

const boxed = (answer: string, gold: string) => scoreMathAnswer(`The result is \\boxed{${answer}}.`, gold);

describe("BC-13 a trailing unit in \\text{…} or \\mbox{…} after any value", () => {
  it.each([
    ["12\\text{ cm}^2", "12"],
    ["12 \\text{ cm}^{2}", "12"],
    ["12\\text{cm}^2", "12"],
    ["865 \\mbox{ inches}^2", "865"],
    ["5\\text{ m}^3", "5"],
    ["5 \\text{ dollars per day}", "5"],
    ["5\\text{ dollars per hour}", "5"],
    ["3 \\text{ per day}", "3"],
    ["60 \\text{ km/h}", "60"],
    ["9.8\\text{ m/s}^2", "9.8"],
    ["\\frac{1}{2}\\text{ cup}", "0.5"],
    ["\\dfrac{3}{4} \\text{ of a pizza}", "0.75"],
    ["\\frac{3}{2}\\text{ cups of flour}", "1.5"],
    ["-4\\text{ degrees}", "-4"],
    ["2.5\\text{ hours}", "2.5"],
    ["1,250\\text{ dollars}", "1250"],
    ["\\$18\\text{ per hour}", "18"],
    ["18 \\text{dollars}", "18"],
    ["18\\text{ of them}", "18"],
  ])("\\boxed{%s} scores 1 against %s", (answer, gold) => {
    expect(boxed(answer, gold)).toMatchObject({ reward: 1, reason: "correct" });
  });

  it.each([
    ["3.5\\,\\text{m}", "3.5"],
    ["3.5\\,\\mathrm{m}", "3.5"],
    ["12\\mathrm{~cm}^2", "12"],
    ["12~\\text{kg}", "12"],
    ["12\\ \\text{kg}", "12"],
    ["12\\;\\textrm{kg}", "12"],
    ["7\\quad\\text{apples}", "7"],
    ["9.8\\,\\mathrm{m}/\\mathrm{s}^2", "9.8"],
    ["4\\,\\text{N}\\cdot\\text{m}", "4"],
    ["3\\,\\text{m}\\,\\text{s}^{-1}", "3"],
    ["90^\\circ\\text{C}", "90"],
    ["1.5 \\times 10^{3}\\text{ kg}", "1500"],
    ["2^{10}\\text{ bytes}", "1024"],
  ])("neighbours: \\boxed{%s} scores 1 against %s", (answer, gold) => {
    expect(boxed(answer, gold)).toMatchObject({ reward: 1, reason: "correct" });
  });

  it("a gold written with a unit compares with a bare answer, both ways", () => {
    expect(boxed("12", "12\\text{ cm}^2").reward).toBe(1);
    expect(boxed("12\\text{ cm}^2", "12\\,\\mathrm{cm}^2").reward).toBe(1);
  });

  it("the value is never rescaled: 5 km is 5, not 5000; 50\\% is 50, not 0.5", () => {
    expect(boxed("5\\text{ km}", "5000")).toMatchObject({ reward: 0, reason: "wrong" });
    expect(boxed("50\\text{\\%}", "50").reward).toBe(1);
    expect(boxed("50\\,\\%", "0.5")).toMatchObject({ reward: 0, reason: "wrong" });
  });

  it.each([
    ["18 \\text{ or } 19", "18"],
    ["18\\text{ or more}", "18"],
    ["18\\text{ and 20 cents}", "18"],
    ["18\\text{ dollars and } 20\\text{ cents}", "18"],
    ["2\\text{ hours } 30\\text{ minutes}", "2"],
    ["18\\text{ more than Bob}", "18"],
    ["18\\text{ of}", "18"],
    ["18\\text{ times}", "18"],
    ["18\\text{ per}", "18"],
    ["18\\text{ to } 20", "18"],
    ["18 \\text{ out of } 20", "18"],
    ["\\frac{1}{2}\\text{ of } 10", "0.5"],
  ])("a relation is no unit: \\boxed{%s} never scores as %s", (answer, gold) => {
    expect(boxed(answer, gold).reward).toBe(0);
  });

  it("a unit block alone or after a non-value stays as written (BC-12 wrappers still unwrap)", () => {
    expect(stripLatexUnits("\\text{(B)}")).toBe("\\text{(B)}");
    expect(stripLatexUnits("x\\text{ cm}")).toBe("x\\text{ cm}");
    expect(stripLatexUnits("\\text{Monday}")).toBe("\\text{Monday}");
    expect(normalizeAnswer("\\text{(B)}")).toBe("B");
    expect(boxed("\\text{13}", "13").reward).toBe(1);
  });
});

describe("BC-13 plain units and rates after the value", () => {
  it.each([
    ["18 dollars per day", "18"],
    ["18 dollars a day", "18"],
    ["18 per hour", "18"],
    ["60 km/h", "60"],
    ["9.8 m/s^2", "9.8"],
    ["12 cm^2", "12"],
    ["12 m²", "12"],
    ["12 square meters", "12"],
    ["3 cups of flour", "3"],
    ["\\frac{1}{2} cup", "\\frac{1}{2}"],
    ["12cm", "12"],
    ["5kg", "5"],
    ["60mph", "60"],
    ["100 degrees Fahrenheit", "100"],
    ["30°C", "30"],
  ])("%s → %s", (raw, value) => {
    expect(normalizeAnswer(raw)).toBe(value);
  });

  it("relations, variables and lists are not units", () => {
    for (const raw of ["10 and 20", "18 or more", "18 more than Bob", "18 times", "2x", "5 e3", "18 per", "\\pi r^2", "4 y", "2 \\pi r", "\\frac{1}{2} b h"]) {
      expect(stripPlainUnits(raw), raw).toBe(raw);
    }
  });

  it("a symbolic answer keeps its variables: \\pi is not \\pi r^2, 4 is not 4 y", () => {
    expect(scoreMathAnswer("\\boxed{\\pi}", "\\pi r^2").reward).toBe(0);
    expect(scoreMathAnswer("\\boxed{\\pi r^2}", "\\pi r^2").reward).toBe(1);
    expect(scoreMathAnswer("\\boxed{4}", "4 y").reward).toBe(0);
    expect(scoreMathAnswer("\\boxed{5}", "5 m").reward).toBe(1);
  });

  it("isUnitPhrase: one to three unit words, an optional rate, no relation word but that `per`", () => {
    for (const unit of ["cm", "cm^2", "m²", "km/h", "dollars", "square feet", "dollars per day", "per hour", "cups of flour", "of a pizza", "°C", "ft.", "dollars a week", "m", "s^{-1}", "N"]) {
      expect(isUnitPhrase(unit), unit).toBe(true);
    }
    for (const not of ["", "or more", "and 5", "5", "of", "of 10", "per", "dollars per", "x", "more than Bob", "a b c d", "18.5", "(B)", "\\pi", "r^2", "y", "dollars a"]) {
      expect(isUnitPhrase(not), not).toBe(false);
    }
  });
});

describe("the same unit kinds behind the other readers", () => {
  it("#### N with a unit, a Final Answer line with a rate", () => {
    expect(scoreMathAnswer("#### 18 dollars", "18", { readers: ["hash"] }).reward).toBe(1);
    expect(scoreMathAnswer("Final Answer: 18\\text{ dollars per day}", "18", { readers: ["final-answer"] }).reward).toBe(1);
    expect(scoreMathAnswer("#### 18 or 19 dollars", "18", { readers: ["hash"] }).reward).toBe(0);
  });
});
