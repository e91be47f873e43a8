// Package overnight runs the overnight window: it starts labelled jobs when
// their window opens, one per repository at a time, moves the ones still
// waiting when the window ends to the next window, tells each issue how its
// job ended, and after each window assembles, stores and delivers the
// morning report (contract section 9).
package overnight
