package lib

// Secret is vendored.
const Secret = "hello from vendor"
