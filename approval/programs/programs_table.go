package programs

import (
	"errors"
	"strings"
)

// The program table: what custos knows of each program, in
// one place. programs.go says how an entry is read; every entry's examples
// are checked by package approval against its rules, the first time a
// policy is compiled (TableExamples).

const gnu = " --help --version"

// gitDiffOpts are the options of git's diff machinery (diff, log -p, show).
const gitDiffOpts = ` -p|-u|--patch -s|--no-patch -U|--unified= -W|--function-context --raw --patch-with-raw
 --patch-with-stat --numstat --shortstat -X|--dirstat=? --cumulative --dirstat-by-file=? --check --summary
 --name-only --name-status --stat=? --stat-width= --stat-name-width= --stat-graph-width= --stat-count=
 --compact-summary --binary --full-index --color=? --ws-error-highlight= --abbrev=? --src-prefix= --dst-prefix=
 --line-prefix= --no-prefix --default-prefix --inter-hunk-context= --output-indicator-new= --output-indicator-old=
 --output-indicator-context= -B|--break-rewrites=? -M|--find-renames=? -C|--find-copies=? --find-copies-harder
 --irreversible-delete -D -l= --no-renames --rename-empty --follow --minimal -w|--ignore-all-space
 -b|--ignore-space-change --ignore-space-at-eol --ignore-cr-at-eol --ignore-blank-lines -I|--ignore-matching-lines=
 --indent-heuristic --patience --histogram --diff-algorithm= --anchored= --word-diff=? --word-diff-regex=
 --color-words=? --color-moved=? --color-moved-ws= --relative=? -a|--text -R --exit-code --quiet
 --ext-diff:run --textconv:run --ignore-submodules=? --submodule=? --ita-invisible-in-index --ita-visible-in-index
 --pickaxe-all --pickaxe-regex -S= -G= --find-object= --diff-filter= -O=:read --rotate-to= --skip-to=
 --output=:write -z`

// gitRevOpts are the options of git's revision walk (log, show).
const gitRevOpts = ` -# -n|--max-count= --skip= --since|--after= --until|--before= --since-as-filter= --author=
 --committer= --grep-reflog= --grep= --all-match --invert-grep -i|--regexp-ignore-case --basic-regexp
 -E|--extended-regexp -F|--fixed-strings -P|--perl-regexp --remove-empty --merges --no-merges --min-parents=
 --max-parents= --first-parent --exclude-first-parent-only --not --all --branches=? --tags=? --remotes=? --glob=
 --exclude= --exclude-hidden= --reflog --alternate-refs --single-worktree --ignore-missing --bisect --cherry-mark
 --cherry-pick --left-only --right-only --cherry -g|--walk-reflogs --merge --boundary --simplify-by-decoration
 --show-pulls --full-history --dense --sparse --simplify-merges --ancestry-path=? --date-order --author-date-order
 --topo-order --reverse --no-walk=? --do-walk --pretty|--format=? --abbrev-commit --oneline --encoding=
 --expand-tabs=? --notes=? --show-notes=? --show-signature --relative-date --date= --parents --children
 --left-right --graph --show-linear-break=? -c --cc --dd --combined-all-paths -m --diff-merges= --remerge-diff -t
 --decorate=? --decorate-refs= --decorate-refs-exclude= --clear-decorations --source --use-mailmap|--mailmap
 --full-diff --log-size -L= -q`

// gitEnv are the variables that make git run a program or load another
// configuration, repository or program directory.
var gitEnv = []string{"GIT_PAGER", "PAGER", "GIT_EXTERNAL_DIFF", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EDITOR",
	"EDITOR", "VISUAL", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND", "GIT_CONFIG*",
	"GIT_EXEC_PATH", "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_TEMPLATE_DIR", "GIT_TRACE*",
	"GIT_DIFF_OPTS", "LESS", "LESSOPEN", "LESSCLOSE", "LESSKEY*"}

const npmCommon = ` --json -l|--long -p|--parseable -g|--global --depth= -a|--all --omit= --include= --prefix=
 -w|--workspace= --workspaces --include-workspace-root --registry= --userconfig=:load --globalconfig=:load
 --loglevel= -s|--silent -q|--quiet -d|--verbose --color=? --no-color --unicode --offline --prefer-offline
 --prefer-online --package-lock-only --production --dev --browser=:run --editor=:run --script-shell=:run
 --shell=:run --viewer=:run --node-options=:run --cache=:load -h|--help`

const cargoCommon = ` -v|--verbose -q|--quiet --color= --locked --offline --frozen --config=:load -Z=:load
 -h|--help --manifest-path=:read --lockfile-path=:read`

const pipCommon = ` --python=:run --log|--log-file=:write -v|--verbose -q|--quiet --isolated --require-virtualenv
 --no-input --proxy= --retries= --timeout= --exists-action= --trusted-host= --cert=:read --client-cert=:read
 --cache-dir= --no-cache-dir --disable-pip-version-check --no-color --no-python-version-warning --use-feature=
 --use-deprecated= --keyring-provider= --root-user-action= --debug -h|--help`

const goBuildFlags = ` -C=:load -a -n -p= -race -msan -asan -cover -covermode= -coverpkg= -v -work -x -asmflags=
 -buildmode= -buildvcs=? -compiler= -gccgoflags= -gcflags= -installsuffix= -ldflags= -linkshared -mod= -modcacherw
 -modfile=:read -overlay=:read -pgo= -pkgdir= -tags= -trimpath -toolexec=:run -exec=:run`

// goTestFlags are go test's own flags (and the test binary's, which go
// test passes on), besides the build flags.
const goTestFlags = ` -bench= -benchtime= -benchmem -count= -coverprofile=:write -cpu= -cpuprofile=:write -failfast -fullpath
 -fuzz= -fuzztime= -fuzzminimizetime= -json -list= -memprofile=:write -memprofilerate= -blockprofile=:write
 -blockprofilerate= -mutexprofile=:write -mutexprofilefraction= -parallel= -run= -short -shuffle= -skip= -timeout=
 -trace=:write -vet= -c -o=:write`

// goVetAnalyzers are go vet's analyzer switches (-printf, -printf=false).
const goVetAnalyzers = ` -appends=? -asmdecl=? -assign=? -atomic=? -bools=? -buildtag=? -cgocall=? -composites=? -copylocks=?
 -defers=? -directive=? -errorsas=? -framepointer=? -hostport=? -httpresponse=? -ifaceassert=? -loopclosure=? -lostcancel=?
 -nilfunc=? -printf=? -printf.funcs= -shift=? -sigchanyzer=? -slog=? -stdmethods=? -stdversion=? -stringintconv=?
 -structtag=? -testinggoroutine=? -tests=? -timeformat=? -unmarshal=? -unreachable=? -unsafeptr=? -unusedresult=?
 -waitgroup=?`

// tarOpts are GNU tar's options; what its modes do to the archive, the
// operands and the disk is tarWords'.
const tarOpts = `-A|--catenate|--concatenate -c|--create -d|--diff|--compare --delete -r|--append -t|--list --test-label
 -u|--update -x|--extract|--get -f|--file= -C|--directory= -T|--files-from=:read -X|--exclude-from=:read
 -I|--use-compress-program=:run --to-command=:run --checkpoint-action=:run -F|--info-script|--new-volume-script=:run
 --rsh-command=:run --rmt-command=:run --set-mtime-command=:run -g|--listed-incremental=:read,write --index-file=:write
 --volno-file=:write --owner-map=:read --group-map=:read --add-file=:read -K|--starting-file= -N|--newer|--after-date=
 --newer-mtime= -V|--label= -H|--format= -b|--blocking-factor= --record-size= -L|--tape-length= --exclude=
 --exclude-tag= --exclude-tag-all= --exclude-tag-under= --exclude-ignore= --exclude-ignore-recursive= --strip-components=
 --transform|--xform= --owner= --group= --mode= --mtime= --sort= --quoting-style= --quote-chars= --no-quote-chars=
 --pax-option= --occurrence=? --backup=? --suffix= --checkpoint=? --totals=? --warning= --atime-preserve=?
 --hole-detection= --sparse-version= --level= --xattrs-include= --xattrs-exclude= --one-top-level=? --set-mtime-format=
 -z|--gzip|--gunzip|--ungzip -j|--bzip2 -J|--xz -Z|--compress|--uncompress --lzip --lzma --lzop --zstd -a|--auto-compress
 --no-auto-compress -v|--verbose -w|--interactive|--confirmation -O|--to-stdout -m|--touch
 -p|--preserve-permissions|--same-permissions -s|--preserve-order|--same-order -o --same-owner --no-same-owner
 --no-same-permissions --numeric-owner -S|--sparse -B|--read-full-records -i|--ignore-zeros -l|--check-links
 -M|--multi-volume -R|--block-number -G|--incremental -W|--verify -U|--unlink-first -k|--keep-old-files
 --keep-newer-files --skip-old-files --overwrite --overwrite-dir --no-overwrite-dir --recursive-unlink --remove-files
 -P|--absolute-names -h|--dereference --hard-dereference --one-file-system --no-recursion --recursion --acls --no-acls
 --selinux --no-selinux --xattrs --no-xattrs --delay-directory-restore --no-delay-directory-restore --null --no-null
 --unquote --no-unquote --wildcards --no-wildcards --wildcards-match-slash --no-wildcards-match-slash --anchored
 --no-anchored --ignore-case --no-ignore-case --exclude-backups --exclude-caches --exclude-caches-all
 --exclude-caches-under --exclude-vcs --exclude-vcs-ignores --ignore-failed-read --ignore-command-error
 --no-ignore-command-error --keep-directory-symlink --check-device --no-check-device --force-local -n|--seek --no-seek
 --restrict --show-defaults --show-omitted-dirs --show-transformed-names|--show-stored-names --show-snapshot-field-ranges
 --full-time --utc --posix --old-archive|--portability --clamp-mtime --verbatim-files-from --no-verbatim-files-from
 --usage -?|--help --version`

// programTable is every program custos knows.
var programTable = []Program{
	// Readers of their operands.
	{name: "cat", opts: "-A|--show-all -b|--number-nonblank -e -E|--show-ends -n|--number -s|--squeeze-blank -t -T|--show-tabs -u -v|--show-nonprinting" + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"cat -n README.md", "cat a b"}, ask: []string{"cat --pre=x f", "cat f > out.txt"}},
	{name: "tac", partial: true, opts: "-s|--separator=", operands: operandSpec{role: roleRead}},
	{name: "head", opts: "-# -c|--bytes= -n|--lines= -q|--quiet|--silent -v|--verbose -z|--zero-terminated" + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"head -n 5 f", "head -5 f", "head -c100 f"}, ask: []string{"head -x f"}},
	{name: "tail", opts: "-# -c|--bytes= -f|--follow=? -F -n|--lines= --max-unchanged-stats= --pid= -q|--quiet|--silent --retry -s|--sleep-interval= -v|--verbose -z|--zero-terminated" + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"tail -n 50 log.txt", "tail -20 f"}, ask: []string{"tail --bogus f"}},
	{name: "less", plusCmds: true, opts: `-? -a -A -B -c -C -d -e -E -f -F -g -G -i -I -J -K -L -m -M -n -N -q -Q -r -R -s -S -u -U -V -w -W -X -~
 -b= -h= -j= -k|--lesskey-file=:run --lesskey-src=:run -o|--log-file=:write -O|--LOG-FILE=:write -p|--pattern= -P|--prompt=
 -t|--tag= -T|--tag-file=:read -x|--tabs= -y|--max-forw-scroll= -z|--window= -D= --shift= --header= --quit-if-one-screen
 --no-init --RAW-CONTROL-CHARS --raw-control-chars --chop-long-lines --ignore-case --IGNORE-CASE --LINE-NUMBERS
 --line-numbers --long-prompt --quit-at-eof --QUIT-AT-EOF --squeeze-blank-lines --silent --quiet --QUIET --tilde --mouse
 --no-keypad --use-color --status-column --follow-name --incsearch --wheel-lines= --jump-target= --buffers= --color= --rscroll=` + gnu,
		env:      []string{"LESSOPEN", "LESSCLOSE", "LESSKEY*", "LESSEDIT", "LESS", "VISUAL", "EDITOR", "SHELL"},
		operands: operandSpec{role: roleRead}, allow: []string{"less -R f", "less +G f", "less +/TODO f"},
		ask: []string{"less '+!id' f", "LESSOPEN='|id %s' less f", "less -k keys f", "less -o out.txt f"}},
	{name: "more", plusCmds: true, opts: "-# -d|--silent -f|--logical -l|--no-pause -c|--print-over -p|--clean-print -e|--exit-on-eof -s|--squeeze -u|--plain -n|--lines= -h|--help -V|--version",
		env: []string{"VISUAL", "EDITOR", "SHELL", "MORE"}, operands: operandSpec{role: roleRead},
		allow: []string{"more f", "more +10 f"}, ask: []string{"more '+!id' f"}},
	{name: "wc", opts: "-c|--bytes -m|--chars -l|--lines --files0-from=:read -L|--max-line-length -w|--words --total=" + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"wc -l f", "wc a b"}, ask: []string{"wc -Q f"}},
	{name: "sort", opts: `-b|--ignore-leading-blanks -d|--dictionary-order -f|--ignore-case -g|--general-numeric-sort
 -i|--ignore-nonprinting -M|--month-sort -h|--human-numeric-sort -n|--numeric-sort -R|--random-sort --random-source=:read
 -r|--reverse --sort= -V|--version-sort --batch-size= -c|--check=? -C --compress-program=:run --debug --files0-from=:read
 -k|--key= -m|--merge -o|--output=:write -s|--stable -S|--buffer-size= -t|--field-separator= -T|--temporary-directory=:write
 --parallel= -u|--unique -z|--zero-terminated` + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"sort -u f", "sort -t, -k2 -n f"},
		ask: []string{"sort --compress-program=sh f", "sort -o out.txt f", "sort --compress=sh f"}},
	{name: "uniq", opts: "-c|--count -d|--repeated -D --all-repeated=? -f|--skip-fields= --group=? -i|--ignore-case -s|--skip-chars= -u|--unique -z|--zero-terminated -w|--check-chars=" + gnu,
		operands: operandSpec{role: roleRead, secondOut: true}, allow: []string{"uniq -c f"}, ask: []string{"uniq f out.txt"}},
	{name: "cut", opts: "-b|--bytes= -c|--characters= -d|--delimiter= -f|--fields= -n --complement -s|--only-delimited --output-delimiter= -z|--zero-terminated" + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"cut -d: -f1 f", "cut -c1-10 f"}, ask: []string{"cut -Z f"}},
	{name: "tr", opts: "-c|-C|--complement -d|--delete -s|--squeeze-repeats -t|--truncate-set1" + gnu,
		allow: []string{"tr a-z A-Z", "tr -d '\\r'"}, ask: []string{"tr -q a b"}},
	{name: "nl", opts: "-b|--body-numbering= -d|--section-delimiter= -f|--footer-numbering= -h|--header-numbering= -i|--line-increment= -l|--join-blank-lines= -n|--number-format= -p|--no-renumber -s|--number-separator= -v|--starting-line-number= -w|--number-width=" + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"nl -ba f"}, ask: []string{"nl -Q f"}},
	{name: "grep", aliases: []string{"egrep", "fgrep"}, opts: `-# -E|--extended-regexp -F|--fixed-strings -G|--basic-regexp
 -P|--perl-regexp -e|--regexp=:lead -f|--file=:read,lead -i|-y|--ignore-case --no-ignore-case -w|--word-regexp -x|--line-regexp
 -z|--null-data -s|--no-messages -v|--invert-match -V|--version --help -m|--max-count= -b|--byte-offset -n|--line-number
 --line-buffered -H|--with-filename -h|--no-filename --label= -o|--only-matching -q|--quiet|--silent --binary-files= -a|--text
 -I -d|--directories= -D|--devices= -r|--recursive -R|--dereference-recursive --include= --exclude= --exclude-from=:read
 --exclude-dir= -L|--files-without-match -l|--files-with-matches -c|--count -T|--initial-tab -Z|--null -B|--before-context=
 -A|--after-context= -C|--context= --group-separator= --no-group-separator --color|--colour=? -U|--binary`,
		operands: operandSpec{lead: 1, role: roleRead}, allow: []string{"grep -rn TODO src", "grep -e x -e y f", "grep -3 x f"},
		ask: []string{"grep --pre=sh x f", "grep -Q x"}},
	{name: "zgrep", partial: true, opts: "-e|--regexp=:lead -f|--file=:read,lead -m|--max-count= -A= -B= -C=", operands: operandSpec{lead: 1, role: roleRead}},
	{name: "rg", opts: `-A|--after-context= --auto-hybrid-regex -B|--before-context= --binary --block-buffered -b|--byte-offset
 -s|--case-sensitive --color= --colors= --column -C|--context= --context-separator= -c|--count --count-matches --crlf --debug
 --trace --dfa-size-limit= -E|--encoding= --engine= --field-context-separator= --field-match-separator= -f|--file=:read,lead
 --files -l|--files-with-matches --files-without-match -F|--fixed-strings -L|--follow -g|--glob= --glob-case-insensitive
 -h|--help --heading -.|--hidden --iglob= -i|--ignore-case --ignore-file=:read --ignore-file-case-insensitive --include-zero
 -v|--invert-match --json --line-buffered -n|--line-number -x|--line-regexp -M|--max-columns= --max-columns-preview
 -m|--max-count= --max-depth|--maxdepth= --max-filesize= --mmap -U|--multiline --multiline-dotall --no-config
 -I|--no-filename --no-heading --no-ignore --no-ignore-dot --no-ignore-exclude --no-ignore-files --no-ignore-global
 --no-ignore-messages --no-ignore-parent --no-ignore-vcs -N|--no-line-number --no-messages --no-mmap --no-pcre2-unicode
 --no-require-git --no-unicode -0|--null --null-data --one-file-system -o|--only-matching --passthru|--passthrough
 --path-separator= -P|--pcre2 --pcre2-version --pre=:run --pre-glob= -p|--pretty -q|--quiet --regex-size-limit=
 -e|--regexp=:lead -r|--replace= -z|--search-zip -S|--smart-case --sort= --sortr= --stats -a|--text -j|--threads=
 --trim -t|--type= --type-add= --type-clear= --type-list -T|--type-not= -u|--unrestricted -V|--version --vimgrep
 -H|--with-filename -w|--word-regexp --no-hidden --no-follow --no-text --no-column --no-heading --no-pre
 --no-search-zip --no-sort-files --sort-files --no-fixed-strings --no-multiline --no-pcre2 --no-crlf --no-stats
 --no-trim --no-binary --no-block-buffered --no-line-buffered --no-unrestricted --no-glob-case-insensitive
 --no-context-separator --no-include-zero --no-max-columns-preview --no-one-file-system --no-invert-match
 --no-byte-offset --no-passthru --no-auto-hybrid-regex --no-encoding --no-ignore-file-case-insensitive --no-json`,
		env: []string{"RIPGREP_CONFIG_PATH"}, operands: operandSpec{lead: 1, role: roleRead},
		allow: []string{"rg -n TODO src", "rg -e TODO -g '*.go'", "rg --hidden -i todo ."},
		ask:   []string{"rg --pre=sh TODO .", "rg --pre sh TODO", "rg --pr=sh TODO", "rg --frobnicate x", "RIPGREP_CONFIG_PATH=x rg TODO"}},
	{name: "ag", opts: `-A|--after= -B|--before= -C|--context=? -m|--max-count= --depth= -f|--follow -i|--ignore-case
 -s|--case-sensitive -S|--smart-case -Q|--literal -F|--fixed-strings -w|--word-regexp -v|--invert-match -l|--files-with-matches
 -L|--files-without-matches -c|--count -o|--only-matching --column --nocolor --color --color-match= --color-path=
 --color-line-number= --noheading --heading --hidden -u|--unrestricted -U|--skip-vcs-ignores -t|--all-text -a|--all-types
 -z|--search-zip --nobreak --break -H --filename --nofilename --numbers --nonumbers --vimgrep -0|--null --ackmate --silent
 --stats --print-long-lines -W|--width= --one-device --nopager --noaffinity --workers= -r|-R|--recurse -n|--norecurse
 --search-binary --multiline --nomultiline -g= -G|--file-search-regex= --ignore= --ignore-dir= --pager=:run
 -p|--path-to-ignore=:read --list-file-types -D|--debug -h|--help -V|--version`,
		operands: operandSpec{lead: 1, role: roleRead}, allow: []string{"ag TODO src", "ag -i todo"}, ask: []string{"ag --pager=sh TODO"}},
	// Listers and metadata.
	{name: "find", special: findOperands, allow: []string{"find . -name '*.go'", "find src -type f -mtime -1 -print0", "find . -maxdepth 2 -not -path './.git/*'"},
		ask: []string{"find . -exec rm {} ;", "find . -fprint out.txt", "find . -frob", "find . -ok id ;"}},
	{name: "fd", aliases: []string{"fdfind"}, opts: `-H|--hidden -I|--no-ignore --no-ignore-vcs --no-ignore-parent -u|--unrestricted
 -s|--case-sensitive -i|--ignore-case -g|--glob --regex -F|--fixed-strings -a|--absolute-path -l|--list-details -L|--follow
 -p|--full-path -0|--print0 -d|--max-depth= --min-depth= --exact-depth= --prune -t|--type= -e|--extension= -E|--exclude=
 -S|--size= --changed-within= --changed-before= --newer= --older= -o|--owner= -x|--exec=:run -X|--exec-batch=:run
 --batch-size= --ignore-file=:read -c|--color= -j|--threads= --max-results= -1 -q|--quiet --show-errors --base-directory=
 --path-separator= --search-path= --strip-cwd-prefix=? --one-file-system --format= -h|--help -V|--version`,
		operands: operandSpec{lead: 1, role: roleRead}, allow: []string{"fd -e go", "fd -H config src"}, ask: []string{"fd -x rm", "fd --exec-batch sh"}},
	{name: "ls", opts: `-a|--all -A|--almost-all --author -b|--escape --block-size= -B|--ignore-backups -c -C --color=? -d|--directory
 -D|--dired -f -F|--classify=? --file-type --format= --full-time -g --group-directories-first -G|--no-group -h|--human-readable
 --si -H|--dereference-command-line --dereference-command-line-symlink-to-dir --hide= --hyperlink=? --indicator-style=
 -i|--inode -I|--ignore= -k|--kibibytes -l -L|--dereference -m -n|--numeric-uid-gid -N|--literal -o -p -q|--hide-control-chars
 --show-control-chars -Q|--quote-name --quoting-style= -r|--reverse -R|--recursive -s|--size -S --sort= --time= --time-style=
 -t -T|--tabsize= -u -U -v -w|--width= -x -X -Z|--context --zero -1` + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"ls -la", "ls -1 src", "ls --color=never"}, ask: []string{"ls -la > out.txt", "ls -%"}},
	{name: "tree", opts: `-a -d -l -f -x -L= -R -P= -I= --gitignore --gitfile=:read --ignore-case --matchdirs --metafirst --prune
 --info --infofile=:read --noreport --charset= --filelimit= --timefmt= -o=:write -q -N -Q -p -u -g -s -h --si --du -D --inodes
 --device -F -v -t -c -U -r --dirsfirst --filesfirst --sort= -i -A -S -n -C -X -J -H= -T= --nolinks --hintro=:read
 --houtro=:read --fromfile --fflinks` + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"tree -L 2 src", "tree -a"}, ask: []string{"tree -o out.txt"}},
	{name: "stat", opts: "-L|--dereference -f|--file-system --cached= -c|--format= --printf= -t|--terse" + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"stat -c %s f"}, ask: []string{"stat -Q f"}},
	{name: "file", opts: `-v|--version -m|--magic-file=:read -z|--uncompress -Z|--uncompress-noreport -b|--brief -c|--checking-printout
 -e|--exclude= --exclude-quiet= -f|--files-from=:read -F|--separator= -i|--mime --apple --extension --mime-type
 --mime-encoding -k|--keep-going -l|--list -L|--dereference -h|--no-dereference -n|--no-buffer -N|--no-pad -0|--print0
 -p|--preserve-date -P|--parameter= -r|--raw -s|--special-files -S|--no-sandbox -d|--debug --help`,
		operands: operandSpec{role: roleRead}, allow: []string{"file -b f"}, ask: []string{"file -C -m magic"}},
	{name: "du", opts: `-0|--null -a|--all --apparent-size -B|--block-size= -b|--bytes -c|--total -D|--dereference-args
 -d|--max-depth= --files0-from=:read -H -h|--human-readable --inodes -k -L|--dereference -l|--count-links -m
 -P|--no-dereference -S|--separate-dirs --si -s|--summarize -t|--threshold= --time=? --time-style= -X|--exclude-from=:read
 --exclude= -x|--one-file-system` + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"du -sh .", "du -d 1 -h src"}, ask: []string{"du -Q"}},
	{name: "diff", opts: `--normal -q|--brief -s|--report-identical-files -c -C|--context=? -u -U|--unified=? -e|--ed -n|--rcs
 -y|--side-by-side -W|--width= --left-column --suppress-common-lines -p|--show-c-function -F|--show-function-line= --label=
 -t|--expand-tabs -T|--initial-tab --tabsize= --suppress-blank-empty -l|--paginate -r|--recursive --no-dereference
 -N|--new-file --unidirectional-new-file --ignore-file-name-case --no-ignore-file-name-case -x|--exclude= -X|--exclude-from=:read
 -S|--starting-file= --from-file=:read --to-file=:read -i|--ignore-case -E|--ignore-tab-expansion -Z|--ignore-trailing-space
 -b|--ignore-space-change -w|--ignore-all-space -B|--ignore-blank-lines -I|--ignore-matching-lines= -a|--text
 --strip-trailing-cr -D|--ifdef= --old-group-format= --new-group-format= --unchanged-group-format= --changed-group-format=
 --line-format= --old-line-format= --new-line-format= --unchanged-line-format= -d|--minimal --horizon-lines=
 --speed-large-files --color=? --palette= -v|--version --help`,
		operands: operandSpec{role: roleRead}, allow: []string{"diff -u a b", "diff -ru a b"}, ask: []string{"diff --frob a b", "diff a b > p.diff"}},
	{name: "cmp", opts: "-b|--print-bytes -i|--ignore-initial= -l|--verbose -n|--bytes= -s|--quiet|--silent --help -v|--version",
		operands: operandSpec{role: roleRead}, allow: []string{"cmp a b", "cmp -l a b"}, ask: []string{"cmp -Q a b"}},
	// Script languages.
	{name: "sed", opts: `-n|--quiet|--silent --debug -e|--expression=:script -f|--file=:scriptfile --follow-symlinks
 -i|--in-place=?:inplace -l|--line-length= --posix -E|-r|--regexp-extended -s|--separate --sandbox:sandbox -u|--unbuffered
 -z|--null-data -b|--binary` + gnu,
		operands: operandSpec{lead: 1, role: roleRead}, script: sedScript,
		allow: []string{"sed -n 1,5p f", "sed 's/a/b/g' f", "sed -e '/^#/d' -e 's/x/y/' f", "sed -n '/start/,/end/{p;}' f", "sed 's/[/]/x/' f", "sed '$a\\\nlast' f", "sed 'y/abc/xyz/' f"},
		ask:   []string{"sed -n '1p; s/a/b/e' README.md", "sed e f", "sed '1e id' f", "sed 's/a/b/w out.txt' f", "sed 'w out.txt' f", "sed -i s/a/b/ f", "sed -f s.sed f", "sed '1{' f", "sed 's/a/b/' \"$F\""}},
	{name: "awk", aliases: []string{"gawk", "mawk", "nawk"}, opts: `-f|--file=:scriptfile -v|--assign= -F|--field-separator=
 -e|--source=:script -E|--exec=:scriptfile -i|--include=:include -l|--load=:run -b|--characters-as-bytes -c|--traditional
 -C|--copyright -g|--gen-pot -h|--usage|--help -I|--trace -k|--csv -L|--lint=? -M|--bignum -N|--use-lc-numeric
 -n|--non-decimal-data -O|--optimize -P|--posix -r|--re-interval -s|--no-optimize -S|--sandbox:sandbox -t|--lint-old
 -V|--version`,
		operands: operandSpec{lead: 1, role: roleRead, assigns: true}, script: awkScript,
		allow: []string{"awk '{print $1}' f", "awk -F: '$3 > 100 {print $1}' f", "awk 'NR==1 || /x|y/ {n++} END {print n > \"/dev/stderr\"}' f", "awk -v n=1 'BEGIN{printf \"%d\\n\", n}'"},
		ask: []string{"awk 'BEGIN{system(\"id\")}'", "awk '{print | \"sh\"}' f", "awk 'BEGIN{\"id\" | getline x}'", "awk '{print > \"out.txt\"}' f",
			"awk -f prog.awk f", "awk -l ext 1", "awk -i inplace 1 f", "awk '{'"}},
	{name: "jq", special: jqOperands, clusters: true, opts: `-c|--compact-output -n|--null-input -r|--raw-output -j|--join-output
 -a|--ascii-output -s|--slurp -S|--sort-keys -e|--exit-status -C|--color-output -M|--monochrome-output --tab --indent=
 --arg== --argjson== --slurpfile==:read --rawfile==:read --args --jsonargs -f|--from-file:scriptfile -L|--library-path=:load
 --seq --stream --stream-errors -R|--raw-input --raw-output0 --unbuffered -h|--help -V|--version --build-configuration
 -b|--binary --debug-dump-disasm --debug-trace`,
		allow: []string{"jq .name package.json", "jq -r '.[] | .x' f", "jq --arg k v '.[$k]' f", "jq -nr '$x' --arg x 1", "jq -n '$ARGS' --args a b"},
		ask:   []string{"jq --frob . f", "jq . f > out.json", "jq -nrf prog.jq", "jq -L lib 'import \"x\" as $x; $x'", "jq -n 'include \"m\"; 1'"}},
	{name: "yq", opts: `-y|--yaml-output|--yml-output -Y|--yaml-roundtrip|--yml-roundtrip -t|--tomlq-output -x|--xml-output
 --xml-item-depth= --xml-dtd --xml-root= --xml-force-list= -e|--exit-status --indentless-lists|--indentless -w|--width=
 --explicit-start --explicit-end -i|--in-place:inplace -c|--compact-output -n|--null-input -r|--raw-output -j|--join-output
 -a|--ascii-output -s|--slurp -S|--sort-keys -C|--color-output -M|--monochrome-output --tab --indent= --arg= --argjson=
 --seq --stream -R|--raw-input -f|--from-file=:read,lead -L= -h|--help -V|--version`,
		operands: operandSpec{lead: 1, role: roleRead}, allow: []string{"yq .version f.yaml", "yq -y .a f.yaml"}, ask: []string{"yq -i .a=1 f.yaml", "yq --frob . f"}},
	{name: "xxd", singleDash: true, opts: `-a|-autoskip -b|-bits -C|-capitalize -c|-cols= -E|-EBCDIC -e -g|-groupsize= -h|-help
 -i|-include -l|-len= -n|-name= -o|-offset= -p|-ps|-postscript|-plain -r|-revert -d -s|-seek= -u -v|-version -R=`,
		operands: operandSpec{role: roleRead, secondOut: true}, allow: []string{"xxd f", "xxd -l 64 f"}, ask: []string{"xxd f out.hex", "xxd -Q f"}},
	{name: "od", opts: "-A|--address-radix= --endian= -j|--skip-bytes= -N|--read-bytes= -S= --strings=? -t|--format= -v|--output-duplicates -w|--width=? --traditional -a -b -c -d -f -i -l -o -s -x" + gnu,
		operands: operandSpec{role: roleRead}, allow: []string{"od -c f", "od -An -tx1 f"}, ask: []string{"od -Q f"}},
	{name: "man", opts: `-C|--config-file=:read -d|--debug -D|--default --warnings=? -f|--whatis -k|--apropos -K|--global-apropos
 -l|--local-file:readops -w|--where|--path|--location -W|--where-cat|--location-cat -c|--catman -R|--recode= -L|--locale=
 -m|--systems= -M|--manpath= -S|-s|--sections= -e|--extension= -i|--ignore-case -I|--match-case --regex --wildcard
 --names-only -a|--all -u|--update --no-subpages -P|--pager=:run -r|--prompt= -7|--ascii -E|--encoding= --no-hyphenation|--nh
 --no-justification|--nj -p|--preprocessor= -t|--troff -T|--troff-device=? -H|--html=?:run -X|--gxditview=?:run -Z|--ditroff
 -?|--help --usage -V|--version`,
		env:   []string{"MANPAGER", "PAGER", "BROWSER", "MANOPT", "MANROFFOPT", "MANROFFSEQ", "LESS", "LESSOPEN", "LESSCLOSE"},
		allow: []string{"man ls", "man 5 crontab", "man -k printf"}, ask: []string{"man -P 'sh -c id' ls", "MANPAGER='sh -c id' man ls", "man -H ls", "PAGER=x man ls"}},
	// Archives, builds, the clock, python's JSON tool: programs allowed
	// by a prefix that reads as harmless, though an option may run code.
	{name: "tar", special: tarWords, clusters: true, oldStyle: true, env: []string{"TAR_OPTIONS", "TAPE", "RSH"},
		opts: tarOpts, allow: []string{"tar -tf x.tar", "tar tf x.tar", "tar -tvzf x.tgz", "tar --list --file=x.tar src",
			"tar -xOf x.tar README.md", "tar -cf - src", "tar -d -f x.tar"},
		ask: []string{"tar -t -f x.tar -I ./x.sh", "tar -tf x.tar --checkpoint=1 --checkpoint-action=exec=id", "tar -xf x.tar",
			"tar xf x.tar", "tar -cf out.tar src", "tar -tf host:x.tar", "tar -xf x.tar --to-command=id", "tar -tf x.tar --frob",
			"tar tIf ./x.sh x.tar", "tar -tf x.tar -F ./next.sh", "tar -xPf x.tar", "tar -cf - --remove-files src", "tar -rf x.tar f"}},
	// make runs the workspace's makefile: its recipes, and under -n its
	// $(shell …), + lines and the rules that remake a makefile; that is
	// the workspace's code, which a rule for make allows, as one for go
	// test allows the tests. What the command line adds is judged.
	{name: "make", aliases: []string{"gmake"}, special: makeWords, clusters: true,
		env: []string{"MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "MAKE_RESTARTS", "MAKELEVEL"},
		opts: `-b -m -B|--always-make -C|--directory=:load -d --debug=? -e|--environment-overrides:load -E|--eval=:run
 -f|--file|--makefile=:load,read -h|--help -i|--ignore-errors -I|--include-dir=:load -j|--jobs=? -k|--keep-going
 -l|--load-average|--max-load=? -L|--check-symlink-times -n|--just-print|--dry-run|--recon -o|--old-file|--assume-old=
 -O|--output-sync=? -p|--print-data-base -q|--question -r|--no-builtin-rules -R|--no-builtin-variables -s|--silent|--quiet
 --no-silent -S|--no-keep-going|--stop -t|--touch:writesany -v|--version -w|--print-directory --no-print-directory
 -W|--what-if|--new-file|--assume-new= --warn-undefined-variables --trace --shuffle=? --jobserver-auth=:load
 --jobserver-fds=:load --jobserver-style=`,
		allow: []string{"make", "make -n", "make -n test", "make --dry-run build", "make -sn", "make -j4 test", "make -k -s"},
		ask: []string{"make -n --eval='$(shell id)'", "make -nE '$(shell id)'", "make -n -f /tmp/x.mk", "make -n -I inc", "make -C sub",
			"make -n CC=sh", "make -n 'X:=$(shell id)'", "MAKEFLAGS=--eval=x make -n", "MAKEFILES=x.mk make -n", "make -t", "make --frob"}},
	{name: "date", special: dateWords, clusters: true, changes: "sets the system clock", opts: `-d|--date= --debug -f|--file=:read
 -I|--iso-8601=? --resolution -R|--rfc-email|--rfc-822|--rfc-2822 --rfc-3339= -r|--reference=:read -s|--set=:changes
 -u|--utc|--universal` + gnu,
		allow: []string{"date", "date +%s", "date -u +%Y-%m-%dT%H:%M:%SZ", "date -d yesterday +%F", "date -Iseconds", "date -r go.mod", "date -uf dates.txt"},
		ask:   []string{"date -s 2020-01-01", "date 010100002030", "date --frob", "date -us 2020-01-01"}},
	// python: only -m json.tool is judged; a script, -c or another module
	// is not (the rule that allows it covers everything python can do).
	{name: "python", aliases: strings.Fields("python3 python3.8 python3.9 python3.10 python3.11 python3.12 python3.13 python3.14"),
		special: pythonWords, modules: true, partial: true,
		env: []string{"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONPLATLIBDIR", "PYTHONINSPECT"}},
	{name: "python -m json.tool", opts: "-h|--help --sort-keys --no-ensure-ascii --json-lines --indent= --tab --no-indent --compact",
		operands: operandSpec{role: roleRead, secondOut: true},
		allow:    []string{"python -m json.tool f.json", "python -m json.tool --sort-keys --indent 2 f.json", "python -m json.tool < f.json"},
		ask:      []string{"python -m json.tool in.json out.json", "python -m json.tool --frob f.json", "python -m json.tool --sort f.json out.json"}},
	// Builtins that name no files.
	{name: "echo", special: noOperands, allow: []string{"echo hello", "echo $((1+2))", "echo -n x", "echo --help"}, ask: []string{"echo x > notes.txt"}},
	{name: "printf", special: noOperands, allow: []string{"printf '%s\\n' a b", "printf -v x %s 1"}, ask: []string{"printf x > notes.txt"}},
	{name: "test", aliases: []string{"["}, special: noOperands, allow: []string{"test -f go.mod"}, ask: []string{"test -f x > out.txt"}},
	// git: global options, then a subcommand.
	{name: "git", subcommands: true, env: gitEnv, opts: `-C=:load -c=:load --config-env=:load --exec-path=?:load --html-path
 --man-path --info-path -p|--paginate -P|--no-pager --no-replace-objects --no-lazy-fetch --no-optional-locks --no-advice
 --bare:load --git-dir=:load --work-tree=:load --namespace= --super-prefix=:load --list-cmds= --attr-source=
 --literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-pathspecs -v|--version -h|--help`,
		allow: []string{"git --version", "git --no-pager log -1"}, ask: []string{"git -c core.pager=sh log", "git -C .. log"}},
	{name: "git status", opts: `-v|--verbose -s|--short -b|--branch --show-stash --ahead-behind --porcelain=? --long -z|--null
 -u|--untracked-files=? --ignored=? --ignore-submodules=? --column=? --no-renames --find-renames=? --renames -M`,
		operands: operandSpec{role: roleMention}, allow: []string{"git status", "git status --porcelain=v1 -uno"}, ask: []string{"git status --frob", "GIT_PAGER=x git status"}},
	{name: "git diff", opts: gitDiffOpts + " --cached|--staged --merge-base --no-index:readops -0 -1 -2 -3 --base --ours --theirs",
		operands: operandSpec{role: roleMention}, allow: []string{"git diff --stat", "git diff HEAD~1 -- src", "git diff -U0 --name-only"},
		ask: []string{"git diff --output=notes.txt", "git diff --ext-diff", "PAGER='sh -c id' git diff", "GIT_EXTERNAL_DIFF=x git diff", "git -c diff.external=x diff"}},
	{name: "git log", opts: gitRevOpts + gitDiffOpts,
		operands: operandSpec{role: roleMention}, allow: []string{"git log --oneline -5", "git log -n 3 --format=%H", "git log -p --stat -- src", "git log --since=2.weeks --author=x"},
		ask: []string{"PAGER='sh -c id' git log", "GIT_PAGER=x git log", "git log --output=x.txt", "git -C /tmp log", "git --git-dir=/x log", "git log --frob"}},
	{name: "git show", opts: gitRevOpts + gitDiffOpts,
		operands: operandSpec{role: roleMention}, allow: []string{"git show HEAD", "git show --stat HEAD~2", "git show HEAD:README.md"}, ask: []string{"git show --textconv HEAD"}},
	{name: "git blame", opts: `--incremental --root --show-stats --progress --score-debug -f|--show-name -n|--show-number -p|--porcelain
 --line-porcelain -e|--show-email --ignore-rev= --ignore-revs-file=:read --color-lines --color-by-age --minimal --contents=:read
 --abbrev=? -b -l -t -s -w -c -L= -S=:read --reverse= --first-parent --date= -M=? -C=? --encoding= --since=`,
		operands: operandSpec{role: roleMention}, allow: []string{"git blame -L 1,10 f", "git blame --porcelain f"}, ask: []string{"git blame --frob f"}},
	// git branch lists; with a name, or an option that deletes, moves,
	// copies or sets up a branch, it changes the repository, which no
	// rule for a read-only command covers (gitBranchWords).
	{name: "git branch", special: gitBranchWords, opts: `-v|--verbose -q|--quiet -t|--track=?:changes -u|--set-upstream-to=:changes
 --unset-upstream:changes --color=? -r|--remotes --contains=?:lists --no-contains=?:lists --abbrev=? -a|--all -d|--delete:changes
 -D:changes -m|--move:changes -M:changes -c|--copy:changes -C:changes -l|--list:lists --show-current --create-reflog:changes
 -f|--force:changes --edit-description:run --merged=?:lists --no-merged=?:lists --column=? --sort= --points-at=:lists -i|--ignore-case --omit-empty
 --recurse-submodules:changes --format=`,
		allow: []string{"git branch", "git branch -a -vv", "git branch --show-current", "git branch --list 'feat/*'", "git branch -r --contains HEAD", "git branch --merged main", "git branch -al 'f*'", "git branch --li 'f*'"},
		ask: []string{"git branch --edit-description", "git branch -D main", "git branch --delete x", "git branch -m old new", "git branch newbranch",
			"git branch -u origin/main", "git branch --dele x", "git branch -fD x", "git branch -C a b"}},
	{name: "git grep", opts: `--cached --no-index:readops --untracked --exclude-standard --recurse-submodules -v|--invert-match
 -i|--ignore-case -w|--word-regexp -a|--text -I --textconv:run -r|--recursive --max-depth= -E|--extended-regexp
 -G|--basic-regexp -F|--fixed-strings -P|--perl-regexp -n|--line-number --column --full-name -l|--files-with-matches|--name-only
 -L|--files-without-match -o|--only-matching -c|--count --color=? --break --heading -C|--context= -B|--before-context=
 -A|--after-context= -# --threads= -p|--show-function -W|--function-context -f=:read,lead -e=:lead --and --or --not
 -q|--quiet --all-match -m|--max-count= -z|--null -h -H -O|--open-files-in-pager=?:run --index`,
		operands: operandSpec{lead: 1, role: roleMention}, allow: []string{"git grep -n TODO", "git grep -e x -- '*.go'"}, ask: []string{"git grep -O TODO", "git grep --open-files-in-pager=sh x"}},
	{name: "git ls-files", opts: `-c|--cached -d|--deleted -m|--modified -o|--others -i|--ignored -s|--stage -k|--killed --directory
 --no-empty-directory --eol --empty-directory -u|--unmerged --resolve-undo -x|--exclude= -X|--exclude-from=:read
 --exclude-per-directory= --exclude-standard --full-name --recurse-submodules --error-unmatch --with-tree= --abbrev=? --debug
 --deduplicate --sparse --format= -t -v -f -z`,
		operands: operandSpec{role: roleMention}, allow: []string{"git ls-files", "git ls-files -o --exclude-standard src"}, ask: []string{"git ls-files --frob"}},
	{name: "git rev-parse", opts: `--parseopt --sq-quote --keep-dashdash --stop-at-non-option --stuck-long --revs-only --no-revs
 --flags --no-flags --default= --prefix= --verify -q|--quiet --sq --short=? --not --abbrev-ref=? --symbolic --symbolic-full-name
 --all --branches=? --tags=? --remotes=? --glob= --exclude= --exclude-hidden= --disambiguate= --local-env-vars --path-format=
 --git-dir --git-common-dir --resolve-git-dir= --git-path= --show-toplevel --show-superproject-working-tree
 --shared-index-path --absolute-git-dir --is-inside-git-dir --is-inside-work-tree --is-bare-repository
 --is-shallow-repository --show-cdup --show-prefix --show-object-format=? --show-ref-format --since|--after= --until|--before=`,
		allow: []string{"git rev-parse HEAD", "git rev-parse --show-toplevel", "git rev-parse --abbrev-ref HEAD"}, ask: []string{"git rev-parse --frob"}},
	// go, npm, cargo, pip: their read subcommands.
	{name: "go", subcommands: true, env: []string{"GOFLAGS", "CC", "CXX", "CGO_*", "GOENV", "GOROOT", "GOTOOLDIR", "PKG_CONFIG"},
		allow: []string{"go version"}, ask: []string{"GOFLAGS=-toolexec=x go list ./..."}},
	{name: "go version", singleDash: true, opts: "-m -v -json", operands: operandSpec{role: roleRead}, allow: []string{"go version", "go version -m bin/x"}, ask: []string{"go version -frob"}},
	{name: "go env", singleDash: true, opts: "-json -changed -u:load -w:load -C=:load", allow: []string{"go env GOPATH", "go env -json"}, ask: []string{"go env -w GOFLAGS=-toolexec=x"}},
	{name: "go list", singleDash: true, opts: "-f= -json=? -m -u -versions -retracted -deps -test -e -export -find -compiled -reuse=:read" + goBuildFlags,
		allow: []string{"go list ./...", "go list -m -json all", "go list -f '{{.Dir}}' ./..."}, ask: []string{"go list -toolexec=sh ./...", "go list -frob"}},
	{name: "go doc", singleDash: true, opts: "-all -c -cmd -short -src -u -http=?:run -C=:load", allow: []string{"go doc fmt.Println", "go doc -all strings"}, ask: []string{"go doc -http"}},
	{name: "go help", allow: []string{"go help build"}},
	// The builders people allow by name: what they compile and test is the
	// workspace's own code (that is what the rule allows); an option that
	// runs another program by name or writes elsewhere is not.
	{name: "go build", singleDash: true, opts: "-o=:write" + goBuildFlags, operands: operandSpec{role: roleRead},
		allow: []string{"go build ./...", "go build -race -tags integration ./..."},
		ask:   []string{"go build -toolexec=sh ./...", "go build -o /etc/x .", "go build -frob ./..."}},
	{name: "go test", singleDash: true, opts: goTestFlags + goBuildFlags, operands: operandSpec{role: roleRead},
		allow: []string{"go test ./...", "go test -run TestX -v -count=1 ./pkg", "go test -race -timeout 5m ./...", "go test ./... -run X -short",
			"go test -bench . -benchmem -run XXX ./pkg"},
		ask: []string{"go test -exec 'sh -c id' ./...", "go test -toolexec id ./...", "go test -coverprofile=/etc/x ./...", "go test -frob ./..."}},
	{name: "go vet", singleDash: true, opts: "-vettool=:run -json -c=" + goVetAnalyzers + goBuildFlags, operands: operandSpec{role: roleRead},
		allow: []string{"go vet ./...", "go vet -printf=false ./pkg", "go vet -json ./..."},
		ask:   []string{"go vet -vettool=/bin/sh ./...", "go vet -vettool /bin/sh ./...", "go vet -frob ./..."}},
	{name: "npm", subcommands: true, env: []string{"npm_config_*", "NPM_CONFIG_*"}, opts: "-v|--version" + npmCommon,
		allow: []string{"npm --version"}, ask: []string{"npm_config_script_shell=x npm ls"}},
	{name: "npm ls", aliases: []string{"npm list", "npm ll", "npm la"}, opts: npmCommon, allow: []string{"npm ls --depth=0", "npm ls --json"}, ask: []string{"npm ls --script-shell=sh"}},
	{name: "npm view", aliases: []string{"npm info", "npm show", "npm v"}, opts: npmCommon, allow: []string{"npm view react version"}, ask: []string{"npm view x --frob"}},
	{name: "npm outdated", opts: npmCommon, allow: []string{"npm outdated --json"}, ask: []string{"npm outdated --userconfig=x"}},
	{name: "npm explain", aliases: []string{"npm why"}, opts: npmCommon, allow: []string{"npm explain react"}},
	{name: "npm root", opts: npmCommon, allow: []string{"npm root -g"}},
	{name: "npm prefix", opts: npmCommon, allow: []string{"npm prefix"}},
	{name: "npm help", opts: npmCommon, allow: []string{"npm help install"}, ask: []string{"npm help --viewer=browser install"}},
	{name: "cargo", subcommands: true, env: []string{"RUSTC*", "RUSTDOC*", "RUSTUP_*", "CARGO_*"},
		opts: "-V|--version --list --explain= -C=:load" + cargoCommon, allow: []string{"cargo --version", "cargo -V"}, ask: []string{"cargo --config x=y tree", "RUSTC_WRAPPER=x cargo metadata"}},
	{name: "cargo tree", opts: `-p|--package= --workspace --exclude= -e|--edges= -i|--invert= --prune= --depth= --prefix= --no-dedupe
 -d|--duplicates --charset= -f|--format= --target= -F|--features= --all-features --no-default-features` + cargoCommon,
		allow: []string{"cargo tree -d", "cargo tree --depth 1"}, ask: []string{"cargo tree -Zunstable"}},
	{name: "cargo metadata", opts: "--format-version= --no-deps --filter-platform= -F|--features= --all-features --no-default-features" + cargoCommon,
		allow: []string{"cargo metadata --no-deps --format-version 1"}, ask: []string{"cargo metadata --config build.rustc=x"}},
	{name: "cargo search", opts: "--limit= --index= --registry=" + cargoCommon, allow: []string{"cargo search serde --limit 5"}},
	{name: "cargo pkgid", opts: "-p|--package=" + cargoCommon, allow: []string{"cargo pkgid"}},
	{name: "cargo locate-project", opts: "--workspace --message-format=" + cargoCommon, allow: []string{"cargo locate-project --workspace"}},
	{name: "cargo version", opts: cargoCommon, allow: []string{"cargo version"}},
	{name: "cargo help", allow: []string{"cargo help build"}},
	{name: "pip", aliases: []string{"pip3"}, subcommands: true, env: []string{"PIP_*", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE"},
		opts: "-V|--version" + pipCommon, allow: []string{"pip --version"}, ask: []string{"pip --python=/tmp/x list", "PIP_PYTHON=x pip list"}},
	{name: "pip list", opts: `-o|--outdated -u|--uptodate -e|--editable -l|--local --user --path= --pre --format= --not-required
 --exclude-editable --include-editable --exclude= -i|--index-url= --extra-index-url= --no-index -f|--find-links=` + pipCommon,
		allow: []string{"pip list --format=json", "pip list -o"}, ask: []string{"pip list --log out.txt"}},
	{name: "pip show", opts: "-f|--files" + pipCommon, allow: []string{"pip show requests", "pip show -f requests"}},
	{name: "pip freeze", opts: "-r|--requirement=:read -l|--local --user --path= --all --exclude-editable --exclude=" + pipCommon, allow: []string{"pip freeze"}},
	{name: "pip check", opts: pipCommon, allow: []string{"pip check"}},
	{name: "pip inspect", opts: "--local --user --path=" + pipCommon, allow: []string{"pip inspect"}},
	{name: "pip help", opts: pipCommon, allow: []string{"pip help install"}},

	// Partial entries: the writers, fetchers and other readers of the file
	// analysis, with the options that name files, so that Read and Edit
	// rules see the files they touch; their other
	// options are not judged.
	{name: "rev", partial: true, operands: operandSpec{role: roleRead}},
	{name: "fold", partial: true, opts: "-w|--width=", operands: operandSpec{role: roleRead}},
	{name: "fmt", partial: true, opts: "-w|--width= -g|--goal= -p|--prefix=", operands: operandSpec{role: roleRead}},
	{name: "expand", partial: true, opts: "-t|--tabs=", operands: operandSpec{role: roleRead}},
	{name: "unexpand", partial: true, opts: "-t|--tabs=", operands: operandSpec{role: roleRead}},
	{name: "strings", partial: true, opts: "-n|--bytes= -t|--radix= -e|--encoding=", operands: operandSpec{role: roleRead}},
	{name: "hexdump", partial: true, opts: "-e= -f=:read -n= -s=", operands: operandSpec{role: roleRead}},
	{name: "base64", partial: true, opts: "-w|--wrap=", operands: operandSpec{role: roleRead}},
	{name: "base32", partial: true, opts: "-w|--wrap=", operands: operandSpec{role: roleRead}},
	{name: "md5sum", aliases: []string{"sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "cksum", "sum"}, partial: true, operands: operandSpec{role: roleRead}},
	{name: "b2sum", partial: true, opts: "-l|--length=", operands: operandSpec{role: roleRead}},
	{name: "comm", partial: true, operands: operandSpec{role: roleRead}},
	{name: "join", partial: true, opts: "-a= -e= -j= -o= -t= -1= -2= -v=", operands: operandSpec{role: roleRead}},
	{name: "paste", partial: true, opts: "-d|--delimiters=", operands: operandSpec{role: roleRead}},
	{name: "column", partial: true, opts: "-s= -c= -o= -N= -R= -W= -H= -O= -l= -E=", operands: operandSpec{role: roleRead}},
	{name: "source", aliases: []string{"."}, partial: true, operands: operandSpec{role: roleRead}},
	{name: "iconv", partial: true, opts: "-f|--from-code= -t|--to-code= -o|--output=:write", operands: operandSpec{role: roleRead}},
	{name: "tee", partial: true, operands: operandSpec{role: roleWrite}},
	{name: "touch", partial: true, opts: "-r|--reference=:read -t= -d|--date=", operands: operandSpec{role: roleWrite}},
	{name: "truncate", partial: true, opts: "-s|--size= -r|--reference=:read", operands: operandSpec{role: roleWrite}},
	{name: "rm", aliases: []string{"rmdir", "unlink"}, partial: true, operands: operandSpec{role: roleWrite}},
	{name: "shred", partial: true, opts: "-n|--iterations= -s|--size=", operands: operandSpec{role: roleWrite}},
	{name: "mkdir", aliases: []string{"mkfifo", "mknod"}, partial: true, opts: "-m|--mode=", operands: operandSpec{role: roleWrite}},
	{name: "chown", aliases: []string{"chgrp"}, partial: true, opts: "--reference=:read,lead", operands: operandSpec{lead: 1, role: roleWrite}},
	{name: "cp", aliases: []string{"ln"}, partial: true, opts: "-t|--target-directory=:dir -S|--suffix=", operands: operandSpec{role: roleRead, lastDest: true}},
	{name: "mv", partial: true, opts: "-t|--target-directory=:dir -S|--suffix=", operands: operandSpec{role: roleRead, lastDest: true, sourcesRW: true}},
	{name: "install", partial: true, opts: "-t|--target-directory=:dir -S|--suffix= -m|--mode= -o|--owner= -g|--group=", operands: operandSpec{role: roleRead, lastDest: true}},
	{name: "split", partial: true, opts: "-a= -b= -C= -l= -n= -t=", operands: operandSpec{role: roleRead, secondOut: true}},
	{name: "csplit", partial: true, opts: "-b= -f|--prefix=:write -n=", operands: operandSpec{role: roleRead}},
	{name: "gzip", aliases: []string{"gunzip", "bzip2", "bunzip2", "xz", "unxz"}, partial: true, opts: "-S|--suffix= -c|--stdout|--to-stdout:stdout -t|--test:stdout", operands: operandSpec{role: roleReadWrite}},
	{name: "zstd", partial: true, opts: "-o=:write -c|--stdout:stdout", operands: operandSpec{role: roleReadWrite}},
	{name: "curl", partial: true, opts: `-o|--output=:write -T|--upload-file=:read -K|--config=:read -c|--cookie-jar=:write
 -D|--dump-header=:write --trace=:write --trace-ascii=:write --stderr=:write -E|--cert=:read --key=:read --netrc-file=:read
 -b|--cookie=:atfile -d|--data=:atfile --data-binary=:atfile --data-raw= --data-urlencode=:atfile -F|--form=:atfile
 -H|--header=:atfile -u|--user= -A|--user-agent= -x|--proxy= -X|--request= -r|--range= -w|--write-out= -m|--max-time=
 -y|--speed-time= -Y|--speed-limit= -z|--time-cond= -C|--continue-at= -e|--referer= -U|--proxy-user= --url=`},
	{name: "wget", partial: true, opts: `-O|--output-document=:write -o|--output-file=:write -a|--append-output=:write
 -i|--input-file=:read --post-file=:read --body-file=:read -P|--directory-prefix=:write -e|--execute= -T|--timeout=
 -t|--tries= -U|--user-agent= -l|--level= -Q|--quota=`},
	{name: "dd", partial: true, special: ddOperands},
	// Commands whose arguments are never files whose contents they read or
	// change (metadata at most: cd, readlink).
	{name: "true", partial: true, aliases: []string{"false", ":", "pwd", "sleep", "seq", "yes", "whoami", "id",
		"uname", "basename", "dirname", "export", "unset", "set", "shopt", "cd", "pushd", "popd", "exit", "return",
		"type", "which", "wait", "kill", "umask", "local", "declare", "readonly", "realpath", "readlink", "hostname",
		"nproc", "env", "printenv", "read"}},
	{name: "chmod", partial: true, special: chmodOperands},
	{name: "sh", aliases: []string{"bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"}, partial: true, special: shellOperands},
}

func init() {
	// Only the table is built here; its examples are checked when the
	// first policy is compiled (tablesChecked).
	byName, programsErr = buildPrograms(programTable)
	if err := xargsOptions.compile(); err != nil {
		programsErr = errors.Join(programsErr, err)
	}
}
