package hostdeps

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// guestCmd is the program in a qemu user-network guestfwd rule (guestfwd=...-cmd:PROG ...).
var guestCmd = regexp.MustCompile(`-cmd:([a-z][a-z0-9_.+-]*)`)

// Use is one program a source file runs, with where.
type Use struct {
	Program string
	Where   string // file:line
}

// wrapper is a function that runs one of its parameters: as a program name, or as
// shell text (sh -c "..."+param).
type wrapper struct {
	param int
	shell bool
}

// RemoteShell names the methods that send their first argument to a VM node's agent,
// which runs it with sh -c (e2e/agent's /exec): their callers' literals are shell text.
var RemoteShell = map[string]bool{"Exec": true, "MustExec": true}

// GoCommands returns the programs that the Go files run through os/exec: the literal
// name given to exec.Command, exec.CommandContext or exec.LookPath; the commands of a
// literal `sh -c` script; and, one level deep, the literals passed to a function that
// hands one of its parameters to those (a wrapper such as run(name, args...)). Names
// held in variables (binaries the harness builds) are left out.
func GoCommands(files map[string][]byte) ([]Use, error) {
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			return nil, err
		}
		parsed[name] = f
	}
	// Pass 1: direct uses, and the wrappers (keyed by directory and function name).
	wrappers := map[string]wrapper{}
	var uses []Use
	add := func(pos token.Pos, progs ...string) {
		p := fset.Position(pos)
		for _, prog := range progs {
			uses = append(uses, Use{prog, p.Filename + ":" + strconv.Itoa(p.Line)})
		}
	}
	for name, f := range parsed {
		dir := filepath.Dir(name)
		eachFunc(f, func(fname string, params []string, body ast.Node) {
			ast.Inspect(body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				arg, ok := execName(call)
				if !ok {
					return true
				}
				prog, isLit := literal(arg)
				if isLit {
					add(call.Pos(), base(prog))
					if (prog == "sh" || prog == "bash") && len(call.Args) > 2 && isString(call.Args[len(call.Args)-2], "-c") {
						script := call.Args[len(call.Args)-1]
						add(call.Pos(), ShellCommands(literalParts(script))...)
						if i := paramIn(script, params); i >= 0 && fname != "" {
							wrappers[dir+"."+fname] = wrapper{param: i, shell: true}
						}
					}
					return true
				}
				if i := paramIn(arg, params); i >= 0 && fname != "" {
					wrappers[dir+"."+fname] = wrapper{param: i}
				}
				return true
			})
		})
	}
	// qemu runs the program of a guestfwd's cmd: itself.
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				for _, m := range guestCmd.FindAllStringSubmatch(lit.Value, -1) {
					add(lit.Pos(), m[1])
				}
			}
			return true
		})
	}
	// Pass 2: the literals handed to wrappers and to the remote shell.
	for name, f := range parsed {
		dir := filepath.Dir(name)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn := calleeName(call)
			w, ok := wrappers[dir+"."+fn]
			if RemoteShell[fn] && !ok {
				w, ok = wrapper{param: 0, shell: true}, true
			}
			if !ok || w.param >= len(call.Args) {
				return true
			}
			arg := call.Args[w.param]
			if w.shell {
				if s := literalParts(arg); s != "" {
					add(call.Pos(), ShellCommands(s)...)
				}
			} else if prog, isLit := literal(arg); isLit {
				add(call.Pos(), base(prog))
			}
			return true
		})
	}
	return uses, nil
}

// eachFunc calls fn for every function declaration and every function literal bound
// to a name (name := func(...)), with its parameter names in order.
func eachFunc(f *ast.File, fn func(name string, params []string, body ast.Node)) {
	ast.Inspect(f, func(n ast.Node) bool {
		switch d := n.(type) {
		case *ast.FuncDecl:
			if d.Body != nil {
				fn(d.Name.Name, paramNames(d.Type), d.Body)
			}
		case *ast.AssignStmt:
			if len(d.Lhs) == 1 && len(d.Rhs) == 1 {
				if lit, ok := d.Rhs[0].(*ast.FuncLit); ok {
					if id, ok := d.Lhs[0].(*ast.Ident); ok {
						fn(id.Name, paramNames(lit.Type), lit.Body)
					}
				}
			}
		}
		return true
	})
}

func paramNames(t *ast.FuncType) []string {
	var names []string
	for _, field := range t.Params.List {
		if len(field.Names) == 0 {
			names = append(names, "_")
		}
		for _, n := range field.Names {
			names = append(names, n.Name)
		}
	}
	return names
}

// execName returns the argument of an exec.Command, exec.CommandContext or
// exec.LookPath call that names the program.
func execName(call *ast.CallExpr) (ast.Expr, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil, false
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "exec" {
		return nil, false
	}
	i := 0
	switch sel.Sel.Name {
	case "Command", "LookPath":
	case "CommandContext":
		i = 1
	default:
		return nil, false
	}
	if len(call.Args) <= i {
		return nil, false
	}
	return call.Args[i], true
}

func calleeName(call *ast.CallExpr) string {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// literal returns a string literal's value.
func literal(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func isString(e ast.Expr, want string) bool {
	s, ok := literal(e)
	return ok && s == want
}

// literalParts joins the literal pieces of a string expression: a literal, a
// concatenation, or fmt.Sprintf's format, with a space where a value goes.
func literalParts(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.BasicLit:
		s, _ := literal(v)
		return s
	case *ast.BinaryExpr:
		if v.Op == token.ADD {
			return literalParts(v.X) + " " + literalParts(v.Y)
		}
	case *ast.CallExpr:
		if sel, ok := v.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sprintf" && len(v.Args) > 0 {
			return literalParts(v.Args[0])
		}
	case *ast.ParenExpr:
		return literalParts(v.X)
	}
	return ""
}

// paramIn returns the index of the parameter that e is, or holds in a concatenation.
func paramIn(e ast.Expr, params []string) int {
	switch v := e.(type) {
	case *ast.Ident:
		for i, p := range params {
			if p == v.Name {
				return i
			}
		}
	case *ast.BinaryExpr:
		if i := paramIn(v.Y, params); i >= 0 {
			return i
		}
		return paramIn(v.X, params)
	}
	return -1
}

func base(prog string) string { return prog[strings.LastIndex(prog, "/")+1:] }
