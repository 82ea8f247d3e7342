package hostdeps

import (
	"regexp"
	"strings"
)

// shellBuiltins are the words in command position that are the shell's own (bash and
// busybox sh), or keywords, never a program on PATH.
var shellBuiltins = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "for": true, "while": true,
	"until": true, "do": true, "done": true, "case": true, "esac": true, "in": true, "function": true,
	"!": true, "{": true, "}": true, "[": true, "[[": true, "]]": true, "]": true, "test": true, "echo": true,
	"printf": true, "cd": true, "set": true, "export": true, "local": true, "return": true, "read": true,
	"trap": true, "mapfile": true, "shift": true, "exit": true, "wait": true, "true": true, "false": true,
	"command": true, "type": true, "source": true, ".": true, "eval": true, "unset": true, "declare": true,
	"readonly": true, "ulimit": true, "umask": true, "pwd": true, "let": true, ":": true, "break": true,
	"continue": true, "kill": true, "jobs": true, "disown": true,
}

// prefixCommands run the command that follows them; their own options (and, for
// timeout and nice, one value) are skipped to reach it.
var prefixCommands = map[string]int{
	"exec": 0, "timeout": 1, "nice": 0, "setsid": 0, "xargs": 0, "env": 0, "sudo": 0, "chroot": 1,
	"unshare": 0, "nohup": 0, "time": 0, "flock": 1,
	// Keywords that a command follows on the same line.
	"if": 0, "then": 0, "else": 0, "elif": 0, "do": 0, "while": 0, "until": 0, "!": 0, "{": 0,
}

// valueOptions are the prefix commands' options whose value is the next word.
var valueOptions = map[string]map[string]bool{
	"nice": {"-n": true}, "timeout": {"-s": true, "-k": true}, "sudo": {"-u": true}, "flock": {"-w": true},
	"env": {"-u": true},
}

var (
	commandWord = regexp.MustCompile(`^(\.?/[a-z0-9_./+-]+|[a-z][a-z0-9_.+-]*)$`)
	funcDef     = regexp.MustCompile(`(?m)^\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\(\)\s*\{`)
	assignment  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=`)
	// casePattern is a case branch's pattern at a line's start ("deps)", "a|b)").
	casePattern = regexp.MustCompile(`(?m)^(\s*)[A-Za-z0-9_*|"'.-]+\)`)
)

// ShellCommands returns the programs a shell script runs: the first word of every
// simple command (after variable assignments and prefix commands such as timeout or
// exec), in command substitutions too, and inside `sh -c '...'` strings. Functions the
// script defines, builtins, keywords and words that are not literal names (variables,
// paths built at run time) are left out. It reads shell the way these scripts are
// written (one command a line or joined by | ; && ||); it is no full parser.
func ShellCommands(script string) []string {
	defined := map[string]bool{}
	for _, m := range funcDef.FindAllStringSubmatch(script, -1) {
		defined[m[1]] = true
	}
	script = casePattern.ReplaceAllString(script, "$1")
	seen := map[string]bool{}
	var out []string
	var walk func(string)
	walk = func(s string) {
		for _, seg := range segments(s) {
			for _, sub := range seg.subs {
				walk(sub)
			}
			name, rest := commandOf(seg.words)
			if name == "" {
				continue
			}
			if (name == "sh" || name == "bash") && len(rest) >= 2 && rest[0] == "-c" {
				walk(rest[1])
			}
			base := name[strings.LastIndex(name, "/")+1:]
			if defined[base] || shellBuiltins[base] || !commandWord.MatchString(name) || seen[base] {
				continue
			}
			seen[base] = true
			out = append(out, base)
		}
	}
	walk(script)
	return out
}

// commandOf picks the program of one simple command's words, and the words after it.
func commandOf(words []string) (string, []string) {
	i := 0
	for i < len(words) && assignment.MatchString(words[i]) {
		i++
	}
	for i < len(words) {
		w := words[i]
		skip, ok := prefixCommands[w]
		if !ok {
			return w, words[i+1:]
		}
		i++
		for i < len(words) && strings.HasPrefix(words[i], "-") {
			if valueOptions[w][words[i]] {
				i++
			}
			i++
		}
		i += skip
	}
	return "", nil
}

// segment is one simple command: its words, unquoted, and the command substitutions
// found in it.
type segment struct {
	words []string
	subs  []string
}

// segments splits shell text into simple commands at newlines, ; | & && || ( ) and
// keywords' braces, honouring single and double quotes and $(...) nesting. A comment
// runs from an unquoted # at a word's start to the line's end.
func segments(s string) []segment {
	var segs []segment
	cur := segment{}
	var word strings.Builder
	inWord := false
	flushWord := func() {
		if inWord {
			cur.words = append(cur.words, word.String())
			word.Reset()
			inWord = false
		}
	}
	flushSeg := func() {
		flushWord()
		if len(cur.words) > 0 || len(cur.subs) > 0 {
			segs = append(segs, cur)
		}
		cur = segment{}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			if s[i+1] != '\n' {
				word.WriteByte(s[i+1])
				inWord = true
			}
			i++
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			word.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				} else if s[j] == '$' && j+1 < len(s) && s[j+1] == '(' {
					end := matchParen(s, j+1)
					cur.subs = append(cur.subs, s[j+2:end])
					j = end
				}
				j++
			}
			if j > len(s) {
				j = len(s)
			}
			word.WriteString(s[i+1 : min(j, len(s))])
			inWord = true
			i = j
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			end := matchParen(s, i+1)
			if i+2 < len(s) && s[i+2] != '(' { // $(( arithmetic )) runs nothing
				cur.subs = append(cur.subs, s[i+2:min(end, len(s))])
			}
			word.WriteString("$()")
			inWord = true
			i = end
		case c == '`':
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				j = len(s) - i - 1
			}
			cur.subs = append(cur.subs, s[i+1:i+1+j])
			i += j + 1
		case c == '#' && !inWord:
			for i < len(s) && s[i] != '\n' {
				i++
			}
			flushSeg()
		case c == '\n' || c == ';' || c == '|' || c == '&' || c == '(' || c == ')':
			flushSeg()
		case c == ' ' || c == '\t':
			flushWord()
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	flushSeg()
	return segs
}

// matchParen returns the index of the ) that closes the ( at open, honouring quotes and
// nesting, or len(s) when there is none.
func matchParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			if j := strings.IndexByte(s[i+1:], '\''); j >= 0 {
				i += j + 1
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return len(s)
}
