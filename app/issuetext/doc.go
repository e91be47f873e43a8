// Package issuetext prepares what people wrote on GitHub — an issue, its
// comments, a check's output — for the model: hidden text removed or
// marked (Clean), and an issue's thread reduced to what stood when the
// job was triggered, each comment marked with its author's standing, and
// bounded in size with what was left out stated (Gather).
package issuetext
