package secret

// APIKey must never reach the model.
const APIKey = "k"
