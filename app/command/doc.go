// Package command parses the `/selfcode …` comment grammar (contract section
// 4) into a verb and its instructions.
package command
