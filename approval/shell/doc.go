// Package shell reads a Bash command line statically, the way bash would
// run it, and says what it does: the simple commands it runs (wrappers
// looked through, quotes removed, flags normalised), the files it reads,
// writes or names, the variables it sets and exports, and the code hidden
// in arithmetic and in nested scripts. Each command's own words are read
// by its entry in the program table (approval/programs), which records
// through the walker what it found. What cannot be decided statically is
// listed as undecidable, never guessed.
//
// It decides nothing: rules, modes, presets and verdicts are package
// approval's, which matches its rules against this package's Analysis. It
// starts no process, reads no file and never imports approval, so that
// policy code in the workflow can use it and the analysis can be tested
// on its own.
package shell
