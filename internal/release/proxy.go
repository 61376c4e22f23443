package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// writeProxy lays out a GOPROXY=file:// directory serving every module of r,
// as the working tree has it, at version: each zipped go.mod requires its
// siblings at that same version, so the proxy is closed over the workspace.
// Files are those git sees (tracked or untracked, not ignored), so build
// output and data directories in the tree never reach a zip.
func writeProxy(r *repo, dir, version string) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	for _, m := range r.Modules {
		gomod, err := withSiblingsAt(m.File, version)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Dir, err)
		}
		files, err := worktreeFiles(filepath.Join(r.Root, m.Dir), gomod)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Dir, err)
		}
		esc, err := module.EscapePath(m.Path)
		if err != nil {
			return err
		}
		vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return err
		}
		var zbuf bytes.Buffer
		if err := modzip.Create(&zbuf, module.Version{Path: m.Path, Version: version}, files); err != nil {
			return fmt.Errorf("%s: %w", m.Dir, err)
		}
		info, _ := json.Marshal(struct {
			Version string
			Time    time.Time
		}{version, time.Now().UTC().Truncate(time.Second)})
		for name, data := range map[string][]byte{
			version + ".zip":  zbuf.Bytes(),
			version + ".mod":  gomod,
			version + ".info": info,
			"list":            []byte(version + "\n"),
		} {
			if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// worktreeFiles lists the files of the module in dir as git sees them, with
// go.mod's content replaced by gomod.
func worktreeFiles(dir string, gomod []byte) ([]modzip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var files []modzip.File
	for _, p := range strings.Split(string(out), "\x00") {
		if p == "" {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		if _, err := os.Lstat(full); os.IsNotExist(err) {
			continue // tracked, deleted in the working tree
		}
		f := worktreeFile{rel: path.Clean(p), full: full}
		if f.rel == "go.mod" {
			f.data = gomod
		}
		files = append(files, f)
	}
	return files, nil
}

type worktreeFile struct {
	rel, full string
	data      []byte // replaces the file's content when non-nil
}

func (f worktreeFile) Path() string { return f.rel }

func (f worktreeFile) Lstat() (os.FileInfo, error) {
	fi, err := os.Lstat(f.full)
	if err != nil || f.data == nil {
		return fi, err
	}
	return sizedInfo{fi, int64(len(f.data))}, nil
}

func (f worktreeFile) Open() (io.ReadCloser, error) {
	if f.data != nil {
		return io.NopCloser(bytes.NewReader(f.data)), nil
	}
	return os.Open(f.full)
}

type sizedInfo struct {
	os.FileInfo
	size int64
}

func (s sizedInfo) Size() int64 { return s.size }
