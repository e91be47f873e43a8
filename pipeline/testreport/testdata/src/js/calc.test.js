const { add } = require("./calc");
describe("add", () => {
  test("adds", () => { expect(add(2, 2)).toBe(4); });
  test("zero", () => { expect(add(1, 0)).toBe(1); });
  describe("nested", () => { test("deep", () => { expect(true).toBe(true); }); });
  test.skip("later", () => {});
});
test("top level", () => { expect(1).toBe(1); });
