package hostdeps

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoFiles reads the tracked files of the repository at root whose names pass keep.
func RepoFiles(root string, keep func(string) bool) (map[string][]byte, error) {
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, name := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !keep(name) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}
