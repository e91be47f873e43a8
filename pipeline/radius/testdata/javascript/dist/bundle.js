require("../src/util/format");
