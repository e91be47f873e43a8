exports.add = (a, b) => a - b; // the bug
