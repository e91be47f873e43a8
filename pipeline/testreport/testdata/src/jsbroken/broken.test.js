const missing = require("./does-not-exist");
test("never", () => {});
