const assert = require("node:assert");
describe("add", () => { it("adds", () => assert.strictEqual(1 + 2, 3)); });
