const assert = require("node:assert");
const test = require("node:test");
const add = (a, b) => a + b;
test("adds", () => assert.strictEqual(add(1, 2), 3));
