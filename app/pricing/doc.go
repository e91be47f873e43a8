// Package pricing turns a model call's tokens into dollars: a price per
// model name (input, cached input and output, per million tokens), with
// defaults for common models that the server configuration overrides
// (SELFCODE_MODEL_PRICES). A model without a price costs "unknown", never
// zero.
package pricing
