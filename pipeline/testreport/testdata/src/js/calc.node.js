const assert = require("node:assert");
const { describe, it, test } = require("node:test");
const { add } = require("./calc");
describe("add", () => {
  it("adds", () => { assert.strictEqual(add(2, 2), 4); });
  it("zero", () => { assert.strictEqual(add(1, 0), 1); });
  it("later", { skip: "not today" }, () => {});
});
test("top level", () => {});
