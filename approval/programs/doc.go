// Package programs is what custos knows of the programs a command line
// runs: the program table (each program's options, whether each takes a
// value and what it does, the roles of its operands, the variables that
// make it run another program, and example commands a rule for it must
// and must not allow), the readers of the programs whose words need more
// than the table (tar, make, find, jq, git branch, the scripts of sed and
// awk), the wrappers that run another command (env, sudo, timeout, xargs),
// and the flags that may be permuted freely (rm -rf is rm -f -r).
//
// It holds the vocabulary the shell analysis and the policy share: a Word
// of a command, the AccessKind of a file it names, a Finding an allow rule
// must name. It does not read command lines: approval/shell walks them
// and, for each command, hands the entry its words with a Walker to
// record on. It does not decide: package approval checks the examples
// against its rules and judges the findings. It starts no process, reads
// no file and imports neither approval nor approval/shell.
package programs
