import { SELF } from "cloudflare:test";
import { expect, it } from "vitest";
it("smoke", async () => {
  const r = await SELF.fetch("http://x/start");
  expect(await r.text()).toBe("ok");
});
