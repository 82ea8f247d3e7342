package hostdeps

import (
	"reflect"
	"sort"
	"testing"
)

func TestShellCommands(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         []string
	}{
		{"pipes and lists", "ipvsadm -Ln | grep TCP && ipset list || true; conntrack -L", []string{"conntrack", "grep", "ipset", "ipvsadm"}},
		{"assignments and prefixes", "X=1 Y=2 timeout 60 qemu-system-x86_64 -m 1\nexec nice -n 19 setsid make prebuild", []string{"make", "qemu-system-x86_64"}},
		{"substitutions", `k=$(ls "$d" | head -1); echo "$(uname -r)" ` + "`id -u`", []string{"head", "id", "ls", "uname"}},
		{"quotes hide text", `echo "a; b | c" 'd && e'`, nil},
		{"sh -c recurses", `unshare -n sh -c 'ip link set lo up && ./x.test'`, []string{"ip", "sh", "x.test"}},
		{"functions, keywords, comments", "f() { cpio -o; }\nif f; then depmod -a; fi # modprobe x\nfor m in a b; do gzip -1; done", []string{"cpio", "depmod", "gzip"}},
		{"case patterns", "deps() { :; }\ncase $1 in\n  deps) deps ;;\n  run) mkfs.ext4 x ;;\n  *) exit 2 ;;\nesac", []string{"mkfs.ext4"}},
		{"paths and variables", `/usr/sbin/ip a; "$bin" -test.v; $(MAKE) x`, []string{"ip"}},
		{"arithmetic runs nothing", "n=$((a + b)); sleep 1", []string{"sleep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ShellCommands(tc.script)
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ShellCommands(%q) = %q, want %q", tc.script, got, tc.want)
			}
		})
	}
}

func TestGoCommands(t *testing.T) {
	src := `package p
import ("os/exec"; "fmt")
func run(name string, args ...string) { exec.Command(name, args...).Run() }
func sh(cmd string) { exec.Command("sh", "-c", "set -e; "+cmd).Run() }
func f(n *Node) {
	exec.Command("/usr/sbin/ipset", "list").Run()
	exec.CommandContext(ctx, "conntrack", "-L").Run()
	exec.LookPath("mmdebstrap")
	exec.Command(bins.Kubectl, "get").Run()
	run("iptables-save")
	sh("ipvsadm -Ln | sort")
	n.MustExec(fmt.Sprintf("nft list table %s", x))
	inner := func(prog string) { exec.Command(prog).Run() }
	inner("cpio")
	_ = "user,guestfwd=tcp:1.2.3.4:1-cmd:socat - TCP:127.0.0.1:2"
}`
	uses, err := GoCommands(map[string][]byte{"d/p.go": []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, u := range uses {
		seen[u.Program] = true
	}
	var got []string
	for p := range seen {
		got = append(got, p)
	}
	sort.Strings(got)
	want := []string{"conntrack", "cpio", "ipset", "iptables-save", "ipvsadm", "mmdebstrap", "nft", "sh", "socat", "sort"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GoCommands = %q, want %q", got, want)
	}
}

func TestMakefileScript(t *testing.T) {
	mk := "V := $(shell git describe)\nall: x ## help\n\t@mkdir -p $(dir $(OUT))\n\t$(GO) vet ./... && $(MAKE) y\n\t-rm -f $$tmp\n"
	got := ShellCommands(MakefileScript(mk))
	sort.Strings(got)
	if want := []string{"git", "go", "make", "mkdir", "rm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Makefile commands = %q, want %q", got, want)
	}
}

func TestParseList(t *testing.T) {
	lines, err := ParseList("# c\ninstall ipset ipset\nbase coreutils cat cp\n")
	if err != nil || len(lines) != 2 || lines[1].Package != "coreutils" || len(lines[1].Programs) != 2 {
		t.Fatalf("ParseList = %+v, %v", lines, err)
	}
	for _, bad := range []string{"apt ipset ipset\n", "install ipset\n"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q) accepted a bad line", bad)
		}
	}
}
