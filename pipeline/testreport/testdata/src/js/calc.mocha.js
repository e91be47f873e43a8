const assert = require("node:assert");
const { add } = require("./calc");
describe("add", () => {
  it("adds", () => { assert.strictEqual(add(2, 2), 4); });
  it("zero", () => { assert.strictEqual(add(1, 0), 1); });
  describe("nested", () => { it("deep", () => {}); });
  it.skip("later", () => {});
});
